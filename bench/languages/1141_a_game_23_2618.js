const [a, b] = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter(Boolean).map(Number);
if (b % a !== 0) { console.log('-1'); } else {
    let m = b / a, t = 0;
    while (m % 2 === 0) { m /= 2; ++t; }
    while (m % 3 === 0) { m /= 3; ++t; }
    console.log(String(m === 1 ? t : -1));
}
