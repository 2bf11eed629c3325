const t = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter(Boolean).map(Number);
const n = t[0];
const dp = new Array(n + 1).fill(0);
let pre = 0;
for (let i = 1; i <= n; ++i) { pre ^= i; dp[i] = pre; }
let ans = 0;
for (let i = 1; i <= n; ++i) ans ^= t[i] ^ (dp[i - 1] * (Math.floor(n / i) % 2)) ^ dp[n % i];
console.log(String(ans >>> 0));   // JS bitwise ops are 32-bit: the xor read back unsigned
