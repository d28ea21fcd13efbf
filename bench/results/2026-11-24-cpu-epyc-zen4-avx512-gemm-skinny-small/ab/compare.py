import sys,re,glob
def parse(f):
    d={}
    for line in open(f):
        m=re.match(r'^(f32|bf16|i8)/(\S+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+([\d.]+)x',line)
        if m: d[m.group(1)+'/'+m.group(2)]=(float(m.group(3)),float(m.group(4)),float(m.group(6)))
    return d
for n in ['skinny','cubes_shapes']:
    rows={}
    for f in sorted(glob.glob(f'./*_{n}_*.txt')):
        tag=f.split('/')[-1].split('_')[0]+f.split('_')[-1][:-4]
        for k,v in parse(f).items(): rows.setdefault(k,{})[tag]=v
    print(n)
    for k,v in rows.items():
        print(f"{k:28s}", '  '.join(f"{t}:{v[t][0]:7.1f}/{v[t][1]:7.1f}={v[t][2]:.2f}" for t in sorted(v)))
