#!/usr/bin/env python3
"""Episode (session) ranking rules for episodes/search, scored offline on LoCoMo (issue 25; bench/README.md).

  node --import tsx bench/locomo-episodes.ts --convs 0-2 --arms-out arms02.json
  node --import tsx bench/locomo-episodes.ts --convs 3-4 --arms-out arms34.json
  python3 bench/locomo-episode-rules.py arms02.json arms34.json

Each question's event candidates of both arms (300 each, with their sessions) are fused per event as events/search
does (RRF, K = 5, vector weight 0.5, floor 0.3 for vector-only candidates; the first `pool` of each arm), then grouped
into sessions by each rule; session R@5 is the share of the question's evidence sessions among a rule's top 5
sessions. Category 2 (temporal) separately; then the chosen rule's neighbours with the paired standard error of each
against "A" (first appearance). Episode-level lists (BM25 over a session's concatenated text, cosine to its mean
event vector) come from the same dump.
"""
import json, sys, math, collections
def load(f): return json.load(open(f))['questions']
K=5; W=0.5; FLOOR=0.3
def rrf(r,k=K): return (k+1)/(k+r)
def fuse(fts, vec, pool=40):
    f={}; ep={}
    for i,(p,s,sc) in enumerate(fts[:pool]):
        f[p]=rrf(i+1)/(1+W); ep[p]=s
    for i,(p,s,sc) in enumerate(vec[:pool]):
        if p not in f and sc<FLOOR: continue
        f[p]=f.get(p,0)+W*rrf(i+1)/(1+W); ep[p]=s
    return sorted(((v,p,ep[p]) for p,v in f.items()), key=lambda x:(-x[0],-x[1]))
def by_first(lst):  # lst of (score,pos,ses) sorted
    out=[]
    for _,_,s in lst:
        if s not in out: out.append(s)
    return out
def agg(lst, fn):
    d=collections.defaultdict(list)
    for sc,_,s in lst: d[s].append(sc)
    return [s for s,_ in sorted(d.items(), key=lambda kv: -fn(kv[1]))]
def geo(g): return lambda xs: sum(x*g**i for i,x in enumerate(xs))
def harm(xs): return sum(x/(i+1) for i,x in enumerate(xs))
def rrf_lists(lists, weights, k=K):
    f=collections.defaultdict(float)
    for l,w in zip(lists,weights):
        for i,s in enumerate(l): f[s]+=w*rrf(i+1,k)
    return [s for s,_ in sorted(f.items(), key=lambda kv:-kv[1])]
def arm_eps(arm, pool):
    out=[]
    for p,s,sc in arm[:pool]:
        if s not in out: out.append(s)
    return out
def rules(q):
    fts,vec=q.get('fts'),q.get('vec')
    if fts is None: return None
    ev5=fuse(fts,vec,40); ev300=fuse(fts,vec,300)
    epF=[s for s,_ in q['epFts']]; epV=[s for s,_ in q['epVec']]
    R={}
    R['turns: sessions of top-5 events (current)']=('turns',list(dict.fromkeys(s for _,_,s in ev5[:5])))
    R['A first appearance (max), pool 40']=by_first(ev5)
    R['B max, pool 300']=by_first(ev300)
    R['C sum, pool 40']=agg(ev5,sum)
    R['D sum, pool 300']=agg(ev300,sum)
    R['E max+1/2 decayed, pool 40']=agg(ev5,geo(0.5))
    R['F max+1/2 decayed, pool 300']=agg(ev300,geo(0.5))
    R['G harmonic (x_i/i), pool 40']=agg(ev5,harm)
    R['H harmonic, pool 300']=agg(ev300,harm)
    armF=arm_eps(fts,40); armV=[s for p,s,sc in vec[:40] ]; armV=list(dict.fromkeys(armV))
    R['I per-arm episode RRF (first appearance), pool 40']=rrf_lists([armF,armV],[1,W])
    R['J episode doc BM25 alone']=epF
    R['K episode centroid alone']=epV
    R['L RRF(A, doc BM25)']=rrf_lists([by_first(ev5),epF],[1,1])
    R['M RRF(A, doc BM25, centroid w.5)']=rrf_lists([by_first(ev5),epF,epV],[1,1,W])
    R['N RRF(doc BM25, centroid w.5)']=rrf_lists([epF,epV],[1,W])
    R['O RRF(E, doc BM25)']=rrf_lists([agg(ev5,geo(0.5)),epF],[1,1])
    R['P RRF(C, doc BM25)']=rrf_lists([agg(ev5,sum),epF],[1,1])
    R['Q RRF(armF eps, armV eps, docBM25, centroid) w 1,.5,1,.5']=rrf_lists([armF,armV,epF,epV],[1,W,1,W])
    R['S RRF(H, doc BM25)']=rrf_lists([agg(ev5,harm),epF],[1,1])
    R['T RRF(D, doc BM25)']=rrf_lists([agg(ev300,sum),epF],[1,1])
    return R
def evaluate(f):
    qs=load(f); acc=collections.defaultdict(lambda: [0,0,0,0]); n=len(qs); n2=0
    for q in qs:
        evS=set(int(e[1:e.index(':')]) for e in q['evidence'])
        R=rules(q)
        c2 = q['category']==2
        n2+=c2
        if R is None: continue
        for name,r in R.items():
            if isinstance(r,tuple): r=r[1]
            top=set(r[:5]); v=len(evS&top)/len(evS)
            acc[name][0]+=v
            if c2: acc[name][1]+=v
            top10=set(r[:10]); acc[name][2]+=len(evS&top10)/len(evS)
    return {k:(v[0]/n, v[1]/n2, v[2]/n) for k,v in acc.items()}, n, n2, sum(1 for q in qs if q.get('fts') is None)
F02, F34 = sys.argv[1], sys.argv[2]
a,na,na2,ea=evaluate(F02); b,nb,nb2,eb=evaluate(F34)
print(f'0-2: {na} q ({na2} cat2, {ea} time-only); 3-4: {nb} q ({nb2} cat2, {eb} time-only)')
print(f"{'rule':60s} {'S@5 0-2':>8s} {'3-4':>6s} {'gap':>6s} | {'c2 0-2':>6s} {'3-4':>6s} | S@10 0-2 3-4")
for k in a:
    print(f'{k:60s} {a[k][0]:8.3f} {b[k][0]:6.3f} {a[k][0]-b[k][0]:+6.3f} | {a[k][1]:6.3f} {b[k][1]:6.3f} | {a[k][2]:.3f} {b[k][2]:.3f}')

print()
import statistics
def per_q(f, fn):
    out=[]
    for q in load(f):
        evS=set(int(e[1:e.index(':')]) for e in q['evidence'])
        if q.get('fts') is None: out.append(0); continue
        r=fn(q); out.append(len(evS&set(r[:5]))/len(evS))
    return out
variants={
 'current (sessions of top-5 events)': lambda q: list(dict.fromkeys(s for _,_,s in fuse(q['fts'],q['vec'],40)[:5])),
 'A max': lambda q: by_first(fuse(q['fts'],q['vec'],40)),
 'E g=0.25 pool40': lambda q: agg(fuse(q['fts'],q['vec'],40),geo(0.25)),
 'E g=0.5 pool40': lambda q: agg(fuse(q['fts'],q['vec'],40),geo(0.5)),
 'E g=0.75 pool40': lambda q: agg(fuse(q['fts'],q['vec'],40),geo(0.75)),
 'E g=0.5 pool100': lambda q: agg(fuse(q['fts'],q['vec'],100),geo(0.5)),
 'E g=0.5 pool20': lambda q: agg(fuse(q['fts'],q['vec'],20),geo(0.5)),
}
base={f:per_q(f,variants['A max']) for f in [F02, F34]}
for name,fn in variants.items():
    line=f'{name:40s}'
    for f in [F02, F34]:
        x=per_q(f,fn); d=[a-b for a,b in zip(x,base[f])]
        se=statistics.pstdev(d)/len(d)**0.5
        line+=f'  {sum(x)/len(x):.3f} (vs A {sum(d)/len(d):+.3f} ± {se:.3f})'
    print(line)
