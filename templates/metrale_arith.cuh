// metrale_arith.cuh: everything that fixes the kernels' arithmetic order (filled in by the kernels work).
#pragma once
