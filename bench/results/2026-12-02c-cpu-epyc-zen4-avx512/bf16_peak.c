/* A throwaway micro-benchmark (not built by meson): one core's vdpbf16ps and
 * vfmadd zmm throughput, 12 independent chains. gcc -O2 -mavx512f -mavx512bf16 bf16_peak.c */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define R(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
int main(){
#define D(i) __m512 a##i=_mm512_set1_ps(i);
  R(D)
  __m512bh x=(__m512bh)_mm512_set1_epi32(0x3f803f80);
  __m512 xf=_mm512_set1_ps(1.0f),yf=_mm512_set1_ps(1e-9f);
  long n=100000000; double t0=now();
  for(long k=0;k<n;k++){
#define B(i) a##i=_mm512_dpbf16_ps(a##i,x,x);
    R(B)
    __asm__ volatile("":"+v"(a0),"+v"(a1),"+v"(a2),"+v"(a3),"+v"(a4),"+v"(a5),"+v"(a6),"+v"(a7),"+v"(a8),"+v"(a9),"+v"(a10),"+v"(a11));
  }
  double t=now()-t0;
  printf("bf16: %.1f GFLOP/s\n", n*12*64/t/1e9);
  t0=now();
  for(long k=0;k<n;k++){
#define F(i) a##i=_mm512_fmadd_ps(xf,yf,a##i);
    R(F)
    __asm__ volatile("":"+v"(a0),"+v"(a1),"+v"(a2),"+v"(a3),"+v"(a4),"+v"(a5),"+v"(a6),"+v"(a7),"+v"(a8),"+v"(a9),"+v"(a10),"+v"(a11));
  }
  t=now()-t0; printf("f32: %.1f GFLOP/s\n", n*12*32/t/1e9);
#define S(i) +a##i[0]
  printf("%g\n", 0 R(S));
}
