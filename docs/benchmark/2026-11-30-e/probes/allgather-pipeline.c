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
#include <x86intrin.h>
// Build: gcc -O2 -mcldemote -o ag allgather-pipeline.c -lpthread
// Run: ./ag BYTES FRAGMENT FRESH(0|1) ORDER(0 lockstep|1 writes first|2 fused) REPS [NT_SLOTS REP_MOVSB CLDEMOTE]
// np=2 Allgather through two queues: each side fills its slots from its
// user block (and copies it to its own place, fused), and copies the peer's
// slots out.  order 0: lockstep (write k, read k); 1: all writes then reads.
static size_t N, F, RING=4<<20; static int fresh, order, reps, ntw, rep, dem;
typedef struct { char *user, *slots, *dst; _Alignas(64) _Atomic long pub; long seq; double *ts; } side_t;
static side_t S[2]; static _Alignas(64) _Atomic long bar[2];
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
__attribute__((target("avx512f"))) static void cp(char*d,const char*s,size_t n){
  if(rep){ asm volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory"); return; }
  for(size_t i=0;i<n;i+=256){
    __m512i a=_mm512_loadu_si512(s+i),b=_mm512_loadu_si512(s+i+64),c=_mm512_loadu_si512(s+i+128),e=_mm512_loadu_si512(s+i+192);
    _mm512_store_si512(d+i,a);_mm512_store_si512(d+i+64,b);_mm512_store_si512(d+i+128,c);_mm512_store_si512(d+i+192,e);}}
__attribute__((target("avx512f"))) static void cp2(char*d,char*d2,const char*s,size_t n){
  if(rep){ char*a=d,*b=d2; const char*x=s,*y=s; size_t m=n,k=n; asm volatile("rep movsb":"+D"(a),"+S"(x),"+c"(m)::"memory"); asm volatile("rep movsb":"+D"(b),"+S"(y),"+c"(k)::"memory"); return; }
  for(size_t i=0;i<n;i+=128){
    __m512i a=_mm512_loadu_si512(s+i),b=_mm512_loadu_si512(s+i+64);
    if(ntw){_mm512_stream_si512((void*)(d+i),a);_mm512_stream_si512((void*)(d+i+64),b);} else {_mm512_store_si512(d+i,a);_mm512_store_si512(d+i+64,b);}
    _mm512_storeu_si512(d2+i,a);_mm512_storeu_si512(d2+i+64,b);}
  if(ntw)_mm_sfence();}
__attribute__((target("avx512f"))) static void fused(char*d,char*d2,const char*s,size_t n, char*rd,const char*rs,size_t rn){
  size_t i=0,j=0;
  while(i<n||j<rn){
    if(j<rn){ __m512i a=_mm512_loadu_si512(rs+j),b=_mm512_loadu_si512(rs+j+64),c=_mm512_loadu_si512(rs+j+128),e=_mm512_loadu_si512(rs+j+192);
      _mm512_store_si512(rd+j,a);_mm512_store_si512(rd+j+64,b);_mm512_store_si512(rd+j+128,c);_mm512_store_si512(rd+j+192,e); j+=256;}
    if(i<n){ __m512i a=_mm512_loadu_si512(s+i),b=_mm512_loadu_si512(s+i+64);
      _mm512_store_si512(d+i,a);_mm512_store_si512(d+i+64,b);_mm512_storeu_si512(d2+i,a);_mm512_storeu_si512(d2+i+64,b); i+=128;}
  }}
static void barrier(int me,long it){atomic_store(&bar[me],it);while(atomic_load(&bar[1-me])<it);}
static void *run(void*x){int me=(int)(long)x; pin(me); side_t*m=&S[me],*o=&S[1-me]; volatile long sink=0;
  size_t nf=N/F;
  for(long it=1;it<=reps;it++){
    if(fresh){ memset(m->user,it&0xff,N); for(size_t i=0;i<2*N;i+=64) sink+=m->dst[i]; }
    barrier(me,2*it);
    double t0=now();
    if(order==1){ for(size_t k=0;k<nf;k++){ size_t off=((m->seq+k)*F)%RING; cp2(m->slots+off,m->dst+me*N+k*F,m->user+k*F,F); if(dem) for(size_t l=0;l<F;l+=64) _cldemote(m->slots+off+l); atomic_store_explicit(&m->pub,it*100000+k+1,memory_order_release);} }
    if(order==2){
      size_t off0=(m->seq*F)%RING; cp2(m->slots+off0,m->dst+me*N,m->user,F); atomic_store_explicit(&m->pub,it*100000+1,memory_order_release);
      for(size_t k=0;k<nf;k++){
        while(atomic_load_explicit(&o->pub,memory_order_acquire)<it*100000+(long)k+1);
        size_t roff=((o->seq+k)*F)%RING;
        if(k+1<nf){ size_t off=((m->seq+k+1)*F)%RING; fused(m->slots+off,m->dst+me*N+(k+1)*F,m->user+(k+1)*F,F, m->dst+(1-me)*N+k*F,o->slots+roff,F);
          atomic_store_explicit(&m->pub,it*100000+k+2,memory_order_release);}
        else cp(m->dst+(1-me)*N+k*F,o->slots+roff,F);
      }
    } else
    for(size_t k=0;k<nf;k++){
      if(order==0){ size_t off=((m->seq+k)*F)%RING; cp2(m->slots+off,m->dst+me*N+k*F,m->user+k*F,F); atomic_store_explicit(&m->pub,it*100000+k+1,memory_order_release);}
      while(atomic_load_explicit(&o->pub,memory_order_acquire)<it*100000+(long)k+1);
      size_t off=((o->seq+k)*F)%RING; cp(m->dst+(1-me)*N+k*F,o->slots+off,F);}
    m->ts[it-1]=now()-t0;
    barrier(me,2*it+1); m->seq+=nf; o->seq+=0; 
    barrier(me,2*it+1);
  }
  return 0;}
int main(int argc,char**argv){
  N=strtoul(argv[1],0,0); F=strtoul(argv[2],0,0); fresh=atoi(argv[3]); order=atoi(argv[4]); reps=atoi(argv[5]); ntw=argc>6?atoi(argv[6]):0; rep=argc>7?atoi(argv[7]):0; dem=argc>8?atoi(argv[8]):0;
  for(int i=0;i<2;i++){S[i].user=aligned_alloc(4096,N);S[i].slots=aligned_alloc(4096,RING);S[i].dst=aligned_alloc(4096,2*N);memset(S[i].user,1,N);memset(S[i].slots,0,RING);memset(S[i].dst,0,2*N);S[i].ts=malloc(8*reps);}
  pthread_t t; pthread_create(&t,0,run,(void*)1L); run((void*)0L); pthread_join(t,0);
  double *ts=malloc(8*reps); for(int i=0;i<reps;i++) ts[i]=S[0].ts[i]>S[1].ts[i]?S[0].ts[i]:S[1].ts[i];
  for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++)if(ts[j]<ts[i]){double x=ts[i];ts[i]=ts[j];ts[j]=x;}
  printf("N=%zu F=%zu fresh=%d order=%d: median %.1f us\n",N,F,fresh,order,ts[reps/2]/1e3);
}
