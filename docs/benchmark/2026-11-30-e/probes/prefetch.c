#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static size_t N; static char *src, *dst; static _Atomic int phase;
static int variant, dist;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
__attribute__((target("avx512f"))) static void cp512(char*d,const char*s,size_t n,int pf){
  for(size_t i=0;i<n;i+=256){
    if(pf){ _mm_prefetch(s+i+pf,_MM_HINT_T0); _mm_prefetch(s+i+pf+64,_MM_HINT_T0);_mm_prefetch(s+i+pf+128,_MM_HINT_T0);_mm_prefetch(s+i+pf+192,_MM_HINT_T0);}
    __m512i a=_mm512_loadu_si512(s+i),b=_mm512_loadu_si512(s+i+64),c=_mm512_loadu_si512(s+i+128),e=_mm512_loadu_si512(s+i+192);
    _mm512_store_si512(d+i,a);_mm512_store_si512(d+i+64,b);_mm512_store_si512(d+i+128,c);_mm512_store_si512(d+i+192,e);}
}
static void *writer(void*x){pin(0);int it=0;for(;;){while(atomic_load(&phase)!=1){if(atomic_load(&phase)==9)return 0;}
  memset(src,(it++)&0xff,N); atomic_store(&phase,2);} }
int main(int argc,char**argv){
  N=strtoul(argv[1],0,0); int reps=atoi(argv[2]);
  src=aligned_alloc(4096,N); dst=aligned_alloc(4096,N); memset(dst,0,N);
  pthread_t t; pthread_create(&t,0,writer,0); pin(1);
  int pfs[]={0,256,512,1024,2048,4096}; int nv=7;
  double best[8][1000]; 
  for(int r=0;r<reps;r++) for(int v=0;v<nv;v++){
    atomic_store(&phase,1); while(atomic_load(&phase)!=2);
    double t0=now();
    if(v<6) cp512(dst,src,N,pfs[v]); else memcpy(dst,src,N);
    best[v][r]=now()-t0; }
  atomic_store(&phase,9); pthread_join(t,0);
  for(int v=0;v<nv;v++){ double*a=best[v]; for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++)if(a[j]<a[i]){double x=a[i];a[i]=a[j];a[j]=x;}
    printf("%s%d: %.2f GB/s  ", v<6?"pf":"memcpy", v<6?pfs[v]:0, N/a[reps/2]); }
  printf("\n");
}
