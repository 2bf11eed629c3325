import java.util.*;
public class Main {
    public static void main(String[] args) {
        long n = new Scanner(System.in).nextLong();
        TreeSet<Long> p = new TreeSet<>();
        for (long i = 2; i * i <= n; ++i) while (n % i == 0) { p.add(i); n /= i; }
        if (n != 1) p.add(n);
        System.out.println(p.size() == 1 ? p.first() : 1L);
    }
}
