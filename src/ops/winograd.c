/* winograd.c: Winograd's minimal filtering for conv2d (template
 * conv2d_winograd.x86, added below): the transform matrices of F(m x m,
 * 3 x 3) and the tolerance its kernels are checked with. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_impl.h"

ob_tolerance ob_winograd_tolerance(int m) {
  switch (m) {
  case 2: return (ob_tolerance){1e-4, 2e-5};
  case 4: return (ob_tolerance){1e-4, 1e-4};
  default: return (ob_tolerance){1e-4, 1e-3};
  }
}
