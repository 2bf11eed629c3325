#include <cstdio>
#include <vector>
int main() {
    int n; scanf("%d", &n);
    std::vector<long long> a(n), dp(n + 1, 0);
    for (auto& x : a) scanf("%lld", &x);
    long long pre = 0;
    for (int i = 1; i <= n; ++i) { pre ^= i; dp[i] = pre; }
    long long ans = 0;
    for (int i = 1; i <= n; ++i) ans ^= a[i - 1] ^ (dp[i - 1] * ((n / i) % 2)) ^ dp[n % i];
    printf("%lld\n", ans);
}
