let n = Number(require('fs').readFileSync(0, 'utf8').trim());
let r = n + 1;
for (let i = 2; i * i <= n; ++i) {
    if (n % i === 0) { r += n / i; n /= i; i = 1; }
}
console.log(String(r));
