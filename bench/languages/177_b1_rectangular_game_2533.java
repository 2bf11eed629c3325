import java.util.*;
public class Main {
    public static void main(String[] args) {
        long n = new Scanner(System.in).nextLong();
        long r = n + 1;
        for (long i = 2; i * i <= n; ++i) {
            if (n % i == 0) { r += n / i; n /= i; i = 1; }
        }
        System.out.println(r);
    }
}
