#include <cstdio>
#include <set>
int main() {
    long long n; scanf("%lld", &n);
    std::set<long long> p;
    for (long long i = 2; i * i <= n; ++i) while (n % i == 0) { p.insert(i); n /= i; }
    if (n != 1) p.insert(n);
    printf("%lld\n", p.size() == 1 ? *p.begin() : 1LL);
}
