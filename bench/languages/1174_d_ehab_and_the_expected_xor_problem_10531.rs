use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<usize> = s.split_ascii_whitespace().map(|x| x.parse().unwrap()).collect();
    let (n, x) = (v[0], v[1]);
    let mut vis = vec![false; (1 << 18) + 1];
    let lmt = 1usize << n;
    let mut prev = 0usize;
    let mut ans: Vec<String> = Vec::new();
    vis[0] = true; if x < vis.len() { vis[x] = true; }
    for i in 1..lmt {
        if vis[i] { continue; }
        ans.push((prev ^ i).to_string()); prev = i; vis[i] = true;
        if (i ^ x) < vis.len() { vis[i ^ x] = true; }
    }
    println!("{}\n{}", ans.len(), ans.join(" "));
}
