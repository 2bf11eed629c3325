use std::collections::BTreeSet;
use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let n: i64 = s.trim().parse().unwrap();
    let mut d = BTreeSet::new();
    d.insert(1i64);
    let mut i: i64 = 2;
    while i * i <= n { if n % i == 0 { d.insert(i); d.insert(n / i); } i += 1; }
    let mut ans: Vec<i64> = vec![1];
    for &i in &d { let t = n / i; ans.push(t * (2 + (t - 1) * i) / 2); }
    ans.sort();
    let out: Vec<String> = ans.iter().map(|x| x.to_string()).collect();
    println!("{}", out.join(" "));
}
