const n = BigInt(require('fs').readFileSync(0, 'utf8').trim());
const d = new Set([1n]);
for (let i = 2n; i * i <= n; ++i) if (n % i === 0n) { d.add(i); d.add(n / i); }
const ans = [1n];
for (const i of d) { const t = n / i; ans.push(t * (2n + (t - 1n) * i) / 2n); }
ans.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
console.log(ans.map(String).join(' '));
