// ZIP archives: the public interface is tandem/zip.hpp; this is where the
// library's own code includes it from.
#pragma once

#include "tandem/zip.hpp"
