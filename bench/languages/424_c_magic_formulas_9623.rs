use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let t: Vec<i64> = s.split_ascii_whitespace().map(|x| x.parse().unwrap()).collect();
    let n = t[0] as usize;
    let mut dp = vec![0i64; n + 1];
    let mut pre = 0i64;
    for i in 1..=n { pre ^= i as i64; dp[i] = pre; }
    let mut ans = 0i64;
    for i in 1..=n { ans ^= t[i] ^ (dp[i - 1] * (((n / i) % 2) as i64)) ^ dp[n % i]; }
    println!("{}", ans);
}
