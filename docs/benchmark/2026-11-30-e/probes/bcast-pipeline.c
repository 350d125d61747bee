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
static size_t N, F; static char *user, *slots, *dst; static int fresh, nt, reps, rnt;
static _Alignas(64) _Atomic long pub; static _Alignas(64) _Atomic long go; static _Alignas(64) _Atomic long ack;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
__attribute__((target("avx512f"))) static void cp(char*d,const char*s,size_t n,int stream){
  for(size_t i=0;i<n;i+=256){
    __m512i a=_mm512_loadu_si512(s+i),b=_mm512_loadu_si512(s+i+64),c=_mm512_loadu_si512(s+i+128),e=_mm512_loadu_si512(s+i+192);
    if(stream){_mm512_stream_si512((void*)(d+i),a);_mm512_stream_si512((void*)(d+i+64),b);_mm512_stream_si512((void*)(d+i+128),c);_mm512_stream_si512((void*)(d+i+192),e);}
    else{_mm512_store_si512(d+i,a);_mm512_store_si512(d+i+64,b);_mm512_store_si512(d+i+128,c);_mm512_store_si512(d+i+192,e);}
  }
  if(stream)_mm_sfence();
}
static size_t RING=4<<20; static long seq=0;
static void *writer(void*x){pin(0);
  for(long it=1;it<=reps;it++){
    if(fresh) memset(user,it&0xff,N);
    while(atomic_load(&go)!=it);            // call starts
    size_t nf=N/F;
    for(size_t k=0;k<nf;k++){ size_t off=((seq+k)*F)%RING; cp(slots+off,user+k*F,F,nt); atomic_store_explicit(&pub,it*100000+k+1,memory_order_release);}
    seq+=nf;
    while(atomic_load(&ack)!=it);
  } return 0;}
int main(int argc,char**argv){
  N=strtoul(argv[1],0,0); F=strtoul(argv[2],0,0); fresh=atoi(argv[3]); nt=atoi(argv[4]); reps=atoi(argv[5]); rnt=argc>6?atoi(argv[6]):0;
  user=aligned_alloc(4096,N); slots=aligned_alloc(4096,RING); dst=aligned_alloc(4096,N);
  memset(user,1,N); memset(slots,0,RING); memset(dst,0,N);
  pthread_t t; pthread_create(&t,0,writer,0); pin(1);
  double *ts=malloc(sizeof(double)*reps); long rseq=0; volatile long sink=0;
  for(long it=1;it<=reps;it++){
    if(fresh){ for(size_t i=0;i<N;i+=64) sink+=dst[i]; }  // the check reads dst
    for(volatile int s=0;s<20000;s++);                    // let the writer's fill finish
    double t0=now(); atomic_store(&go,it);
    size_t nf=N/F;
    for(size_t k=0;k<nf;k++){ while(atomic_load_explicit(&pub,memory_order_acquire)<it*100000+(long)k+1); size_t off=((rseq+k)*F)%RING; cp(dst+k*F,slots+off,F,rnt);}
    rseq+=nf; ts[it-1]=now()-t0; atomic_store(&ack,it);
  }
  pthread_join(t,0);
  for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++)if(ts[j]<ts[i]){double x=ts[i];ts[i]=ts[j];ts[j]=x;}
  printf("N=%zu F=%zu fresh=%d nt=%d: median %.1f us (%.1f GB/s)\n",N,F,fresh,nt,ts[reps/2]/1e3,N/ts[reps/2]);
}
