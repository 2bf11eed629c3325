use std::collections::BTreeSet;
use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let mut n: i64 = s.trim().parse().unwrap();
    let mut p = BTreeSet::new();
    let mut i: i64 = 2;
    while i * i <= n { while n % i == 0 { p.insert(i); n /= i; } i += 1; }
    if n != 1 { p.insert(n); }
    println!("{}", if p.len() == 1 { *p.iter().next().unwrap() } else { 1 });
}
