// RunLoopKitGLib's C target is its header (CRunLoopKitGLib.h); SwiftPM needs one source file to build it.
#include "CRunLoopKitGLib.h"
