import csv, collections, sys
tag, rawf, sassf = sys.argv[1], sys.argv[2], sys.argv[3]
print(f"Nsight Compute (--set full, --clock-control none) of {tag}, NVIDIA H200")
print("Per kernel: duration, stall reasons (warps per issued instruction), SASS opcode mix weighted by executions.\n")
rows=list(csv.reader(open(rawf))); hdr=rows[0]; data=rows[2:]
raw={}
for d in data:
    n=d[hdr.index('Kernel Name')]
    st=[]
    for i,h in enumerate(hdr):
        if h.startswith('smsp__average_warps_issue_stalled_') and h.endswith('_per_issue_active.ratio'):
            try: st.append((float(d[i]),h[len('smsp__average_warps_issue_stalled_'):-len('_per_issue_active.ratio')]))
            except: pass
    st.sort(reverse=True)
    raw[n]=(d[hdr.index('gpu__time_duration.sum')], d[hdr.index('smsp__inst_executed.sum')], st[:8])
lines=open(sassf).read().split('\n')
secs=[]; cur=None
for l in lines:
    if l.startswith('"Kernel Name"'):
        cur=[l]; secs.append(cur)
    elif cur is not None: cur.append(l)
def num(x):
    try: return float(x.replace(',',''))
    except: return 0.0
seen=set()
for sec in secs:
    name=sec[0].split(',')[1].strip('"')
    if name in seen: continue
    seen.add(name)
    rd=list(csv.reader(sec[1:])); h=rd[0]; rs=[r for r in rd[1:] if len(r)==len(h)]
    ie=h.index('Instructions Executed'); src=h.index('Source')
    tot=sum(num(r[ie]) for r in rs)
    ops=collections.Counter()
    for r in rs:
        op=r[src].strip().split()
        if not op: continue
        o=op[1] if op[0].startswith('@') else op[0]
        ops[o.split('.')[0]]+=num(r[ie])
    dur,inst,st=raw.get(name,('?','?',[]))
    print(f"== {name}: {dur} ms, {float(inst):.0f} warp instructions")
    print("   stalls: "+", ".join(f"{n} {v:.2f}" for v,n in st))
    intl=sum(ops[o] for o in {'IMAD','ISETP','IADD3','BRA','MOV','LOP3','SHF','LEA','SEL','BSSY','BSYNC','VIADD','UMOV','CS2R','IMNMX','PLOP3','S2R','S2UR','ULDC','ULEA','UIADD3'})
    fp=sum(ops[o] for o in {'DFMA','DADD','DMUL','FFMA','FADD','FMUL'})
    print(f"   integer, move and branch: {intl/tot*100:.1f}%; floating point: {fp/tot*100:.1f}%")
    print("   "+", ".join(f"{o} {c/tot*100:.1f}%" for o,c in ops.most_common(14)))
