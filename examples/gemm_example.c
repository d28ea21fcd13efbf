/* The README's example: C = relu(A B + bias) on the CPU backend. */
#include <stdio.h>
#include <tessera.h>

int main(void) {
    tsr_context *ctx;
    if (tsr_context_create(&ctx, NULL) != TSR_OK) return fprintf(stderr, "%s\n", tsr_last_error()), 1;
    float a[2 * 3] = {1, 2, 3, 4, 5, 6}, b[3 * 2] = {1, -1, 0, 1, 1, 0}, bias[2] = {0.5f, -9}, c[2 * 2];
    tsr_gemm_desc d;
    tsr_gemm_desc_init(&d); /* row-major f32, alpha 1, beta 0 */
    d.m = 2, d.n = 2, d.k = 3;
    d.epilogue.num_steps = 2;
    d.epilogue.steps[0] = tsr_epilogue_bias(bias, TSR_F32);
    d.epilogue.steps[1] = tsr_epilogue_activation(TSR_ACT_RELU);
    tsr_status st = tsr_gemm(ctx, &d, a, b, c);
    if (st != TSR_OK) return fprintf(stderr, "%s: %s\n", tsr_status_string(st), tsr_last_error()), 1;
    printf("C = [%g %g; %g %g] via %s\n", c[0], c[1], c[2], c[3], tsr_last_kernel());
    tsr_context_destroy(ctx);
    return !(c[0] == 4.5f && c[1] == 0 && c[2] == 10.5f && c[3] == 0); /* [4 -1; 10 1] + bias, relu */
}
