#include <cstdio>
int main() {
    long long n; scanf("%lld", &n);
    long long r = n + 1;
    for (long long i = 2; i * i <= n; ++i) {
        if (n % i == 0) { r += n / i; n /= i; i = 1; }
    }
    printf("%lld\n", r);
}
