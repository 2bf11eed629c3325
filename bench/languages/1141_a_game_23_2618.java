import java.util.*;
public class Main {
    public static void main(String[] args) {
        Scanner s = new Scanner(System.in);
        long a = s.nextLong(), b = s.nextLong();
        if (b % a != 0) { System.out.println(-1); return; }
        long m = b / a; int t = 0;
        while (m % 2 == 0) { m /= 2; ++t; }
        while (m % 3 == 0) { m /= 3; ++t; }
        System.out.println(m == 1 ? t : -1);
    }
}
