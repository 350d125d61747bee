#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
#include <stdatomic.h>
static inline uint64_t now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
static int cmp(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
struct sh { _Alignas(64) _Atomic uint64_t ping; _Alignas(64) _Atomic uint64_t pong; _Alignas(64) _Atomic uint64_t flag; _Alignas(64) _Atomic uint64_t stamp; _Alignas(64) _Atomic uint64_t back;};
int main(int argc,char**argv){int N=2000;
 struct sh*s=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
 pid_t c=fork(); cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(c==0?1:0,&cs); sched_setaffinity(0,sizeof cs,&cs);
 uint64_t *rtt=malloc(N*8),*ow=malloc(N*8);
 if(c==0){ for(uint64_t i=1;i<=N;i++){ while(atomic_load(&s->ping)!=i); atomic_store(&s->pong,i);} 
   /* one-way: child stamps then sets flag; parent measures */
   for(uint64_t i=1;i<=N;i++){ while(atomic_load(&s->back)!=i); for(volatile int k=0;k<200;k++); atomic_store_explicit(&s->stamp,now(),memory_order_relaxed); atomic_store(&s->flag,i);} 
   /* reverse direction: parent stamps, child measures */
   for(uint64_t i=1;i<=N;i++){ uint64_t t; while(atomic_load(&s->flag)!=N+i); t=now(); ow[i-1]=t-atomic_load(&s->stamp); atomic_store(&s->back,N+i);} 
   qsort(ow,N,8,cmp); printf("one-way parent->child p10 %lu p50 %lu p90 %lu\n",ow[N/10],ow[N/2],ow[9*N/10]); return 0; }
 for(int w=0;w<2;w++){}
 for(uint64_t i=1;i<=N;i++){ uint64_t t0=now(); atomic_store(&s->ping,i); while(atomic_load(&s->pong)!=i); rtt[i-1]=now()-t0; }
 for(uint64_t i=1;i<=N;i++){ atomic_store(&s->back,i); while(atomic_load(&s->flag)!=i); uint64_t t=now(); ow[i-1]=t-atomic_load(&s->stamp);} 
 for(uint64_t i=1;i<=N;i++){ for(volatile int k=0;k<200;k++); atomic_store_explicit(&s->stamp,now(),memory_order_relaxed); atomic_store(&s->flag,N+i); while(atomic_load(&s->back)!=N+i);} 
 qsort(rtt,N,8,cmp); qsort(ow,N,8,cmp);
 printf("rtt p10 %lu p50 %lu p90 %lu | one-way child->parent p10 %lu p50 %lu p90 %lu\n",rtt[N/10],rtt[N/2],rtt[9*N/10],ow[N/10],ow[N/2],ow[9*N/10]);
 wait(0); }
