// GTK 4's C API for the checks: the system-library target a GTK app of its own declares (pkgConfig: "gtk4").
#include <gtk/gtk.h>
