let n = Number(require('fs').readFileSync(0, 'utf8').trim());
const p = new Set();
for (let i = 2; i * i <= n; ++i) while (n % i === 0) { p.add(i); n /= i; }
if (n !== 1) p.add(n);
console.log(String(p.size === 1 ? [...p][0] : 1));
