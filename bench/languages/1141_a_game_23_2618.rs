use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_ascii_whitespace().map(|x| x.parse().unwrap()).collect();
    let (a, b) = (v[0], v[1]);
    if b % a != 0 { println!("-1"); return; }
    let (mut m, mut t) = (b / a, 0);
    while m % 2 == 0 { m /= 2; t += 1; }
    while m % 3 == 0 { m /= 3; t += 1; }
    println!("{}", if m == 1 { t } else { -1 });
}
