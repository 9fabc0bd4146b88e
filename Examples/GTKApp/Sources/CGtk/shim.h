// GTK 4's C API for Swift: the one header, found through pkg-config's gtk4 flags.
#include <gtk/gtk.h>
