// The PTX executor (emu/nv/ptx.h).
#include <doctest/doctest.h>

#include "emu/nv/ptx.h"
