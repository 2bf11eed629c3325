const [n, x] = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter(Boolean).map(Number);
const vis = new Uint8Array((1 << 18) + 1);
const lmt = 1 << n, ans = [];
let prev = 0;
vis[0] = 1; if (x < vis.length) vis[x] = 1;
for (let i = 1; i < lmt; ++i) {
    if (vis[i]) continue;
    ans.push(prev ^ i); prev = i; vis[i] = 1;
    if ((i ^ x) < vis.length) vis[i ^ x] = 1;
}
console.log(ans.length + '\n' + ans.join(' '));
