/* ring_copy.c: two threads pinned to cores 0 and 1 copy a message through a ring of N slots of F bytes
 * (writer: source -> slot, release flag; reader: slot -> destination, acknowledgement), as sharm's
 * queues do; prints the reader's median time. Used for issue 11 to choose the large-stream fragment,
 * the fragments in flight and the ring's size, N x F, which must exceed one core's L2 cache
 * (README, "The queue protocol"; `layout::auto_slots`).
 * Build: gcc -O2 -march=native -pthread -o ring_copy bench/ring_copy.c (AVX-512 or AVX2 streams)
 * Run:   ring_copy BYTES F N REPS [nt-reader 0|1] [nt-writer 0|1] */
// two-thread pipeline copy microbenchmark: writer core0 -> slots -> reader core1
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <immintrin.h>

static size_t M, F, N; static int REPS, NT_R, NT_W;
static char *slots, *src, *dst;
typedef struct { _Atomic uint64_t v; char pad[56]; } line;
static line *hdr, ackl, startf, donef;
static double tnow(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
/* Non-temporal copy at the widest vectors the build targets: AVX-512 (one store a line) or AVX2 (two);
 * d line-aligned, n a multiple of 64. */
static void ntcopy(char*d,const char*s,size_t n){
#ifdef __AVX512F__
  for(size_t i=0;i<n;i+=64){__m512i x=_mm512_loadu_si512(s+i);_mm512_stream_si512((__m512i*)(d+i),x);}
#else
  for(size_t i=0;i<n;i+=64){__m256i x=_mm256_loadu_si256((const __m256i*)(s+i)),y=_mm256_loadu_si256((const __m256i*)(s+i+32));
    _mm256_stream_si256((__m256i*)(d+i),x);_mm256_stream_si256((__m256i*)(d+i+32),y);}
#endif
}
static void cp(char*d,const char*s,size_t n,int nt){ if(nt) ntcopy(d,s,n); else memcpy(d,s,n); }
static double res[100000];
static void *writer(void*a){pin(0);uint64_t seq=0;
  for(int r=0;r<REPS;r++){
    memset(src,r,M); // fresh data
    while(atomic_load(&ackl.v)!=seq) ; // reader finished prev rep
    atomic_store(&startf.v,r+1);
    while(atomic_load(&donef.v)!=(uint64_t)r+1) ;
    double t0=tnow();
    size_t nf=(M+F-1)/F;
    for(size_t i=0;i<nf;i++){ size_t k=(seq)%N;
      while(seq>=N && atomic_load_explicit(&ackl.v,memory_order_acquire)<seq-N+1) _mm_pause();
      size_t len=M-i*F<F?M-i*F:F;
      cp(slots+k*F,src+i*F,len,NT_W); if(NT_W)_mm_sfence();
      seq++; atomic_store_explicit(&hdr[k].v,seq,memory_order_release);
    }
    (void)t0;
  } return 0;}
static void *reader(void*a){pin(1);uint64_t seq=0;
  for(int r=0;r<REPS;r++){
    for(size_t i=0;i<M;i+=4096) (void)*(volatile char*)(dst+i); // checker touch (only a bit)
    for(size_t i=0;i<M;i+=64) (void)*(volatile char*)(dst+i);
    atomic_store(&donef.v,r+1);
    while(atomic_load(&startf.v)!=(uint64_t)r+1) ;
    double t0=tnow();
    size_t nf=(M+F-1)/F;
    for(size_t i=0;i<nf;i++){ size_t k=seq%N; seq++;
      while(atomic_load_explicit(&hdr[k].v,memory_order_acquire)!=seq) _mm_pause();
      size_t len=M-i*F<F?M-i*F:F;
      cp(dst+i*F,slots+k*F,len,NT_R);
      atomic_store_explicit(&ackl.v,seq,memory_order_release);
    }
    if(NT_R)_mm_sfence();
    res[r]=tnow()-t0;
  } return 0;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){M=atol(v[1]);F=atol(v[2]);N=atol(v[3]);REPS=atoi(v[4]);NT_R=c>5?atoi(v[5]):0;NT_W=c>6?atoi(v[6]):0;
  slots=mmap(0,F*N,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  hdr=mmap(0,64*N,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  src=aligned_alloc(4096,M);dst=aligned_alloc(4096,M);memset(src,1,M);memset(dst,2,M);memset(slots,0,F*N);
  pthread_t a,b;pthread_create(&a,0,writer,0);pthread_create(&b,0,reader,0);pthread_join(a,0);pthread_join(b,0);
  qsort(res,REPS,sizeof(double),cmpd);
  printf("M=%zu F=%zu N=%zu ntr=%d ntw=%d median %.2f us  (%.1f GB/s) p10 %.2f\n",M,F,N,NT_R,NT_W,res[REPS/2],M/res[REPS/2]/1e3,res[REPS/10]);
}
