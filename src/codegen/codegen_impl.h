/* codegen_impl.h: what the C emitter (codegen.c) and the GPU emitters
 * (codegen_gpu.c) share: the names variables and buffers get in generated
 * code (a C identifier made from the IR's name and its unique id). */
#ifndef OB_CODEGEN_IMPL_H
#define OB_CODEGEN_IMPL_H

#include "opbench/ir.h"

void ob_cg_var_name(ob_str *o, const ob_ivar *v);
void ob_cg_buf_name(ob_str *o, const ob_buffer *b);

#endif
