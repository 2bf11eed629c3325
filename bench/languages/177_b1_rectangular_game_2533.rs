use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let mut n: i64 = s.trim().parse().unwrap();
    let mut r = n + 1;
    let mut i: i64 = 2;
    while i * i <= n {
        if n % i == 0 { r += n / i; n /= i; i = 1; }
        i += 1;
    }
    println!("{}", r);
}
