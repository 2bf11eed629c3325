#include <cstdio>
#include <set>
#include <vector>
#include <algorithm>
int main() {
    long long n; scanf("%lld", &n);
    std::set<long long> d = {1};
    for (long long i = 2; i * i <= n; ++i) if (n % i == 0) { d.insert(i); d.insert(n / i); }
    std::vector<long long> ans = {1};
    for (long long i : d) { long long t = n / i; ans.push_back(t * (2 + (t - 1) * i) / 2); }
    std::sort(ans.begin(), ans.end());
    for (size_t k = 0; k < ans.size(); ++k) printf(k ? " %lld" : "%lld", ans[k]);
    printf("\n");
}
