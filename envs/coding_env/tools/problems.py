"""Source of the shipped problem set: ``python tools/problems.py`` writes
``coding_env/data/problems.jsonl`` (a test checks the two agree).

Each problem: ``id``, ``prompt``, ``entry_point`` (the function or class to define),
``solution`` (a reference solution) and ``tests`` (hidden; each a name and Python
statements run against the solution's namespace; a failed ``assert`` fails it). A
call gets a copy of its arguments; ``args_after()`` gives the latest call's arguments
as the solution left them (a test of in-place changes).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "coding_env" / "data" / "problems.jsonl"

PROBLEMS: list[dict[str, object]] = []


def problem(pid: str, entry_point: str, prompt: str, solution: str, tests: list[str]) -> None:
    PROBLEMS.append(
        {
            "id": pid,
            "entry_point": entry_point,
            "prompt": textwrap.dedent(prompt).strip(),
            "solution": textwrap.dedent(solution).strip() + "\n",
            "tests": [
                {"name": f"test_{i + 1}", "code": textwrap.dedent(t).strip()} for i, t in enumerate(tests)
            ],
        }
    )


problem(
    "two_sum",
    "two_sum",
    """
    Write `two_sum(nums, target)` returning the indices `[i, j]` (i < j) of the two
    numbers in the list `nums` that add up to `target`. Exactly one answer exists.
    """,
    """
    def two_sum(nums, target):
        seen = {}
        for j, x in enumerate(nums):
            if target - x in seen:
                return [seen[target - x], j]
            seen[x] = j
    """,
    [
        "assert two_sum([2, 7, 11, 15], 9) == [0, 1]",
        "assert two_sum([3, 2, 4], 6) == [1, 2]",
        "assert two_sum([3, 3], 6) == [0, 1]",
        "assert two_sum([-1, -2, -3, -4, -5], -8) == [2, 4]",
        "assert two_sum(list(range(10000)), 19997) == [9998, 9999]",
    ],
)

problem(
    "is_palindrome",
    "is_palindrome",
    """
    Write `is_palindrome(s)`: True when `s` reads the same backwards, looking only at
    letters and digits and ignoring case.
    """,
    """
    def is_palindrome(s):
        kept = [c.lower() for c in s if c.isalnum()]
        return kept == kept[::-1]
    """,
    [
        'assert is_palindrome("A man, a plan, a canal: Panama") is True',
        'assert is_palindrome("race a car") is False',
        'assert is_palindrome("") is True',
        'assert is_palindrome("0P") is False',
        'assert is_palindrome("No lemon, no melon") is True',
    ],
)

problem(
    "fizzbuzz",
    "fizzbuzz",
    """
    Write `fizzbuzz(n)` returning a list of strings for 1..n: "Fizz" for multiples of
    3, "Buzz" for multiples of 5, "FizzBuzz" for both, else the number itself.
    """,
    """
    def fizzbuzz(n):
        out = []
        for i in range(1, n + 1):
            s = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
            out.append(s or str(i))
        return out
    """,
    [
        'assert fizzbuzz(5) == ["1", "2", "Fizz", "4", "Buzz"]',
        'assert fizzbuzz(15)[-1] == "FizzBuzz"',
        "assert fizzbuzz(0) == []",
        "assert len(fizzbuzz(100)) == 100",
        'assert fizzbuzz(30).count("FizzBuzz") == 2',
    ],
)

problem(
    "reverse_words",
    "reverse_words",
    """
    Write `reverse_words(s)` returning the words of `s` in reverse order, separated
    by single spaces (no leading or trailing spaces).
    """,
    """
    def reverse_words(s):
        return " ".join(reversed(s.split()))
    """,
    [
        'assert reverse_words("the sky is blue") == "blue is sky the"',
        'assert reverse_words("  hello world  ") == "world hello"',
        'assert reverse_words("a good   example") == "example good a"',
        'assert reverse_words("") == ""',
    ],
)

problem(
    "valid_parentheses",
    "is_valid",
    """
    Write `is_valid(s)` for a string of the characters `()[]{}`: True when every
    bracket is closed by the same kind in the right order.
    """,
    """
    def is_valid(s):
        pairs = {")": "(", "]": "[", "}": "{"}
        stack = []
        for c in s:
            if c in pairs:
                if not stack or stack.pop() != pairs[c]:
                    return False
            else:
                stack.append(c)
        return not stack
    """,
    [
        'assert is_valid("()[]{}") is True',
        'assert is_valid("(]") is False',
        'assert is_valid("([)]") is False',
        'assert is_valid("{[]}") is True',
        'assert is_valid("(") is False',
        'assert is_valid("") is True',
    ],
)

problem(
    "merge_intervals",
    "merge_intervals",
    """
    Write `merge_intervals(intervals)`: given a list of `[start, end]` pairs, merge all
    overlapping ones (touching counts as overlapping) and return them sorted by start.
    """,
    """
    def merge_intervals(intervals):
        out = []
        for start, end in sorted(intervals):
            if out and start <= out[-1][1]:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        return out
    """,
    [
        "assert merge_intervals([[1, 3], [2, 6], [8, 10], [15, 18]]) == [[1, 6], [8, 10], [15, 18]]",
        "assert merge_intervals([[1, 4], [4, 5]]) == [[1, 5]]",
        "assert merge_intervals([]) == []",
        "assert merge_intervals([[5, 7], [1, 2]]) == [[1, 2], [5, 7]]",
        "assert merge_intervals([[1, 10], [2, 3], [4, 5]]) == [[1, 10]]",
    ],
)

problem(
    "roman_to_int",
    "roman_to_int",
    """
    Write `roman_to_int(s)` converting a Roman numeral (I, V, X, L, C, D, M, with the
    subtractive forms IV, IX, XL, XC, CD, CM) to an integer.
    """,
    """
    def roman_to_int(s):
        v = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
        total = 0
        for i, c in enumerate(s):
            if i + 1 < len(s) and v[c] < v[s[i + 1]]:
                total -= v[c]
            else:
                total += v[c]
        return total
    """,
    [
        'assert roman_to_int("III") == 3',
        'assert roman_to_int("LVIII") == 58',
        'assert roman_to_int("MCMXCIV") == 1994',
        'assert roman_to_int("IV") == 4',
        'assert roman_to_int("MMMCMXCIX") == 3999',
    ],
)

problem(
    "int_to_roman",
    "int_to_roman",
    """
    Write `int_to_roman(n)` converting an integer 1 <= n <= 3999 to a Roman numeral,
    using the subtractive forms (IV, IX, XL, XC, CD, CM).
    """,
    """
    def int_to_roman(n):
        table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        out = []
        for value, sym in table:
            count, n = divmod(n, value)
            out.append(sym * count)
        return "".join(out)
    """,
    [
        'assert int_to_roman(3) == "III"',
        'assert int_to_roman(58) == "LVIII"',
        'assert int_to_roman(1994) == "MCMXCIV"',
        'assert int_to_roman(3999) == "MMMCMXCIX"',
        'assert int_to_roman(444) == "CDXLIV"',
    ],
)

problem(
    "fibonacci",
    "fib",
    """
    Write `fib(n)` returning the n-th Fibonacci number (fib(0) = 0, fib(1) = 1). It must
    be fast for n up to 10 000.
    """,
    """
    def fib(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a
    """,
    [
        "assert fib(0) == 0",
        "assert fib(1) == 1",
        "assert fib(10) == 55",
        "assert fib(90) == 2880067194370816120",
        "assert len(str(fib(10000))) == 2090",
    ],
)

problem(
    "is_prime",
    "is_prime",
    """
    Write `is_prime(n)`: True when the integer `n` is prime. Negative numbers, 0 and 1
    are not prime. It must handle n up to 10**12 quickly.
    """,
    """
    def is_prime(n):
        if n < 2:
            return False
        if n % 2 == 0:
            return n == 2
        i = 3
        while i * i <= n:
            if n % i == 0:
                return False
            i += 2
        return True
    """,
    [
        "assert is_prime(2) and is_prime(3) and is_prime(97)",
        "assert not is_prime(1) and not is_prime(0) and not is_prime(-7)",
        "assert not is_prime(91)",
        "assert is_prime(999999000001)",
        "assert [n for n in range(20) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19]",
    ],
)

problem(
    "primes_up_to",
    "primes_up_to",
    """
    Write `primes_up_to(n)` returning the sorted list of all primes <= n (fast for
    n = 1 000 000).
    """,
    """
    def primes_up_to(n):
        if n < 2:
            return []
        sieve = bytearray([1]) * (n + 1)
        sieve[0] = sieve[1] = 0
        for i in range(2, int(n ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i :: i] = bytearray(len(range(i * i, n + 1, i)))
        return [i for i, p in enumerate(sieve) if p]
    """,
    [
        "assert primes_up_to(10) == [2, 3, 5, 7]",
        "assert primes_up_to(1) == []",
        "assert primes_up_to(2) == [2]",
        # Its reply fits under the grader's 1 MiB frame limit (as the one below).
        "assert len(primes_up_to(200000)) == 17984",
    ],
)

problem(
    "lcm_of_list",
    "lcm_of_list",
    """
    Write `lcm_of_list(nums)` returning the least common multiple of a non-empty list of
    positive integers.
    """,
    """
    from math import gcd

    def lcm_of_list(nums):
        out = 1
        for x in nums:
            out = out * x // gcd(out, x)
        return out
    """,
    [
        "assert lcm_of_list([4, 6]) == 12",
        "assert lcm_of_list([7]) == 7",
        "assert lcm_of_list(list(range(1, 21))) == 232792560",
        "assert lcm_of_list([5, 10, 15]) == 30",
    ],
)

problem(
    "group_anagrams",
    "group_anagrams",
    """
    Write `group_anagrams(words)` grouping words that are anagrams of each other.
    Return a list of groups; sort the words inside each group, and sort the groups.
    """,
    """
    def group_anagrams(words):
        groups = {}
        for w in words:
            groups.setdefault("".join(sorted(w)), []).append(w)
        return sorted(sorted(g) for g in groups.values())
    """,
    [
        'assert group_anagrams(["eat", "tea", "tan", "ate", "nat", "bat"]) == '
        '[["ate", "eat", "tea"], ["bat"], ["nat", "tan"]]',
        'assert group_anagrams([""]) == [[""]]',
        "assert group_anagrams([]) == []",
        'assert group_anagrams(["abc", "cba", "bca", "xyz"]) == [["abc", "bca", "cba"], ["xyz"]]',
    ],
)

problem(
    "longest_common_prefix",
    "longest_common_prefix",
    """
    Write `longest_common_prefix(words)` returning the longest string that is a prefix
    of every word in the list ("" for an empty list).
    """,
    """
    import os

    def longest_common_prefix(words):
        return os.path.commonprefix(list(words)) if words else ""
    """,
    [
        'assert longest_common_prefix(["flower", "flow", "flight"]) == "fl"',
        'assert longest_common_prefix(["dog", "racecar", "car"]) == ""',
        'assert longest_common_prefix([]) == ""',
        'assert longest_common_prefix(["same", "same"]) == "same"',
    ],
)

problem(
    "binary_search",
    "binary_search",
    """
    Write `binary_search(arr, target)` returning the index of `target` in the sorted
    list `arr` (distinct values), or -1 when it is absent. Use O(log n) time.
    """,
    """
    def binary_search(arr, target):
        lo, hi = 0, len(arr) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if arr[mid] == target:
                return mid
            if arr[mid] < target:
                lo = mid + 1
            else:
                hi = mid - 1
        return -1
    """,
    [
        "assert binary_search([-1, 0, 3, 5, 9, 12], 9) == 4",
        "assert binary_search([-1, 0, 3, 5, 9, 12], 2) == -1",
        "assert binary_search([], 1) == -1",
        "assert binary_search(list(range(0, 200000, 2)), 199998) == 99999",
        "assert binary_search([5], 5) == 0",
    ],
)

problem(
    "max_subarray",
    "max_subarray",
    """
    Write `max_subarray(nums)` returning the largest sum of a non-empty contiguous
    subarray of `nums`.
    """,
    """
    def max_subarray(nums):
        best = cur = nums[0]
        for x in nums[1:]:
            cur = max(x, cur + x)
            best = max(best, cur)
        return best
    """,
    [
        "assert max_subarray([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6",
        "assert max_subarray([1]) == 1",
        "assert max_subarray([5, 4, -1, 7, 8]) == 23",
        "assert max_subarray([-3, -1, -2]) == -1",
    ],
)

problem(
    "rotate_matrix",
    "rotate",
    """
    Write `rotate(matrix)` returning a new n x n matrix (list of lists) rotated 90
    degrees clockwise.
    """,
    """
    def rotate(matrix):
        return [list(row) for row in zip(*matrix[::-1])]
    """,
    [
        "assert rotate([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [[7, 4, 1], [8, 5, 2], [9, 6, 3]]",
        "assert rotate([[1]]) == [[1]]",
        "assert rotate([[1, 2], [3, 4]]) == [[3, 1], [4, 2]]",
        "m = [[1, 2], [3, 4]]\nrotate(m)\nassert args_after() == ([[1, 2], [3, 4]],)  # input unchanged",
    ],
)

problem(
    "flatten",
    "flatten",
    """
    Write `flatten(items)` returning a flat list of all non-list values in a nested
    list, in order (nesting can be arbitrarily deep).
    """,
    """
    def flatten(items):
        out, stack = [], [iter(items)]
        while stack:
            for x in stack[-1]:
                if isinstance(x, list):
                    stack.append(iter(x))
                    break
                out.append(x)
            else:
                stack.pop()
        return out
    """,
    [
        "assert flatten([1, [2, [3, 4]], 5]) == [1, 2, 3, 4, 5]",
        "assert flatten([]) == []",
        "assert flatten([[[]]]) == []",
        'assert flatten(["a", ["b"], [["c"]]]) == ["a", "b", "c"]',
        "deep = [1]\nfor _ in range(5000):\n    deep = [deep]\nassert flatten(deep) == [1]",
    ],
)

problem(
    "rle_encode",
    "rle_encode",
    """
    Write `rle_encode(s)` run-length encoding a string of letters: each run becomes
    the count followed by the letter, e.g. "aaabcc" -> "3a1b2c".
    """,
    """
    from itertools import groupby

    def rle_encode(s):
        return "".join(f"{len(list(g))}{k}" for k, g in groupby(s))
    """,
    [
        'assert rle_encode("aaabcc") == "3a1b2c"',
        'assert rle_encode("") == ""',
        'assert rle_encode("a") == "1a"',
        'assert rle_encode("a" * 12 + "b") == "12a1b"',
    ],
)

problem(
    "rle_decode",
    "rle_decode",
    """
    Write `rle_decode(s)` inverting run-length encoding: "3a1b2c" -> "aaabcc". Counts
    may have several digits.
    """,
    """
    import re

    def rle_decode(s):
        return "".join(ch * int(n) for n, ch in re.findall(r"(\\d+)(\\D)", s))
    """,
    [
        'assert rle_decode("3a1b2c") == "aaabcc"',
        'assert rle_decode("") == ""',
        'assert rle_decode("12a1b") == "a" * 12 + "b"',
        'assert rle_decode("1x") == "x"',
    ],
)

problem(
    "word_frequencies",
    "word_frequencies",
    """
    Write `word_frequencies(text)` returning a dict mapping each word (lower-cased;
    words are runs of letters and apostrophes) to the number of times it occurs.
    """,
    """
    import re
    from collections import Counter

    def word_frequencies(text):
        return dict(Counter(re.findall(r"[a-z']+", text.lower())))
    """,
    [
        'assert word_frequencies("The cat and the hat.") == {"the": 2, "cat": 1, "and": 1, "hat": 1}',
        'assert word_frequencies("") == {}',
        'assert word_frequencies("Don\'t stop, don\'t!") == {"don\'t": 2, "stop": 1}',
        'assert word_frequencies("a1b") == {"a": 1, "b": 1}',
    ],
)

problem(
    "edit_distance",
    "edit_distance",
    """
    Write `edit_distance(a, b)` returning the Levenshtein distance between two strings
    (insertions, deletions and substitutions each cost 1).
    """,
    """
    def edit_distance(a, b):
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]
    """,
    [
        'assert edit_distance("horse", "ros") == 3',
        'assert edit_distance("intention", "execution") == 5',
        'assert edit_distance("", "abc") == 3',
        'assert edit_distance("same", "same") == 0',
        'assert edit_distance("a" * 300, "b" * 300) == 300',
    ],
)

problem(
    "longest_increasing_subsequence",
    "lis_length",
    """
    Write `lis_length(nums)` returning the length of the longest strictly increasing
    subsequence of `nums` (O(n log n) for 100 000 numbers).
    """,
    """
    from bisect import bisect_left

    def lis_length(nums):
        tails = []
        for x in nums:
            i = bisect_left(tails, x)
            if i == len(tails):
                tails.append(x)
            else:
                tails[i] = x
        return len(tails)
    """,
    [
        "assert lis_length([10, 9, 2, 5, 3, 7, 101, 18]) == 4",
        "assert lis_length([0, 1, 0, 3, 2, 3]) == 4",
        "assert lis_length([7, 7, 7, 7]) == 1",
        "assert lis_length([]) == 0",
        "assert lis_length(list(range(100000))) == 100000",
    ],
)

problem(
    "coin_change",
    "coin_change",
    """
    Write `coin_change(coins, amount)` returning the fewest coins (unlimited supply of
    each denomination) that sum to `amount`, or -1 if impossible.
    """,
    """
    def coin_change(coins, amount):
        inf = amount + 1
        best = [0] + [inf] * amount
        for a in range(1, amount + 1):
            for c in coins:
                if c <= a and best[a - c] + 1 < best[a]:
                    best[a] = best[a - c] + 1
        return best[amount] if best[amount] <= amount else -1
    """,
    [
        "assert coin_change([1, 2, 5], 11) == 3",
        "assert coin_change([2], 3) == -1",
        "assert coin_change([1], 0) == 0",
        "assert coin_change([186, 419, 83, 408], 6249) == 20",
    ],
)

problem(
    "knapsack",
    "knapsack",
    """
    Write `knapsack(items, capacity)`: `items` is a list of `(weight, value)` pairs,
    each usable at most once; return the largest total value with total weight <=
    `capacity`.
    """,
    """
    def knapsack(items, capacity):
        best = [0] * (capacity + 1)
        for w, v in items:
            for c in range(capacity, w - 1, -1):
                best[c] = max(best[c], best[c - w] + v)
        return best[capacity]
    """,
    [
        "assert knapsack([(1, 1), (3, 4), (4, 5), (5, 7)], 7) == 9",
        "assert knapsack([], 10) == 0",
        "assert knapsack([(5, 10)], 4) == 0",
        "assert knapsack([(10, 60), (20, 100), (30, 120)], 50) == 220",
    ],
)

problem(
    "grid_shortest_path",
    "shortest_path",
    """
    Write `shortest_path(grid)`: `grid` is a list of equal-length strings where "#" is a
    wall and "." is open. Return the number of moves (up/down/left/right) from the
    top-left to the bottom-right cell, or -1 if there is no path (or either is a wall).
    """,
    """
    from collections import deque

    def shortest_path(grid):
        rows, cols = len(grid), len(grid[0])
        if grid[0][0] == "#" or grid[-1][-1] == "#":
            return -1
        dist = {(0, 0): 0}
        queue = deque([(0, 0)])
        while queue:
            r, c = queue.popleft()
            if (r, c) == (rows - 1, cols - 1):
                return dist[r, c]
            for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." and (nr, nc) not in dist:
                    dist[nr, nc] = dist[r, c] + 1
                    queue.append((nr, nc))
        return -1
    """,
    [
        'assert shortest_path(["..", ".."]) == 2',
        'assert shortest_path([".#.", ".#.", "..."]) == 4',
        'assert shortest_path([".#", "#."]) == -1',
        'assert shortest_path(["."]) == 0',
        'assert shortest_path(["#."]) == -1',
    ],
)

problem(
    "topological_sort",
    "topo_sort",
    """
    Write `topo_sort(n, edges)`: nodes are 0..n-1 and each edge `(a, b)` means a must
    come before b. Return any valid ordering of all nodes as a list, or None if the
    graph has a cycle.
    """,
    """
    from collections import deque

    def topo_sort(n, edges):
        indeg = [0] * n
        out = [[] for _ in range(n)]
        for a, b in edges:
            out[a].append(b)
            indeg[b] += 1
        queue = deque(i for i in range(n) if indeg[i] == 0)
        order = []
        while queue:
            x = queue.popleft()
            order.append(x)
            for y in out[x]:
                indeg[y] -= 1
                if indeg[y] == 0:
                    queue.append(y)
        return order if len(order) == n else None
    """,
    [
        """
        edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
        order = topo_sort(4, edges)
        assert sorted(order) == [0, 1, 2, 3]
        assert all(order.index(a) < order.index(b) for a, b in edges)
        """,
        "assert topo_sort(2, [(0, 1), (1, 0)]) is None",
        "assert topo_sort(3, []) is not None and sorted(topo_sort(3, [])) == [0, 1, 2]",
        """
        edges = [(i, i + 1) for i in range(999)]
        assert topo_sort(1000, edges) == list(range(1000))
        """,
    ],
)

problem(
    "count_islands",
    "count_islands",
    """
    Write `count_islands(grid)`: `grid` is a list of strings of "1" (land) and "0"
    (water). Return the number of islands (land cells connected horizontally or
    vertically).
    """,
    """
    def count_islands(grid):
        if not grid:
            return 0
        rows, cols = len(grid), len(grid[0])
        seen = set()
        count = 0
        for r in range(rows):
            for c in range(cols):
                if grid[r][c] == "1" and (r, c) not in seen:
                    count += 1
                    stack = [(r, c)]
                    seen.add((r, c))
                    while stack:
                        y, x = stack.pop()
                        for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                            inside = 0 <= ny < rows and 0 <= nx < cols
                            if inside and grid[ny][nx] == "1" and (ny, nx) not in seen:
                                seen.add((ny, nx))
                                stack.append((ny, nx))
        return count
    """,
    [
        'assert count_islands(["11110", "11010", "11000", "00000"]) == 1',
        'assert count_islands(["11000", "11000", "00100", "00011"]) == 3',
        "assert count_islands([]) == 0",
        'assert count_islands(["101", "010", "101"]) == 5',
        'assert count_islands(["1" * 200] * 200) == 1',
    ],
)

problem(
    "dijkstra",
    "shortest_distances",
    """
    Write `shortest_distances(graph, source)`: `graph` maps each node to a list of
    `(neighbour, weight)` pairs (non-negative weights). Return a dict of the shortest
    distance from `source` to every reachable node (the source itself at 0).
    """,
    """
    import heapq

    def shortest_distances(graph, source):
        dist = {source: 0}
        heap = [(0, source)]
        while heap:
            d, x = heapq.heappop(heap)
            if d > dist[x]:
                continue
            for y, w in graph.get(x, []):
                nd = d + w
                if nd < dist.get(y, float("inf")):
                    dist[y] = nd
                    heapq.heappush(heap, (nd, y))
        return dist
    """,
    [
        """
        g = {"a": [("b", 1), ("c", 4)], "b": [("c", 2), ("d", 5)], "c": [("d", 1)], "d": []}
        assert shortest_distances(g, "a") == {"a": 0, "b": 1, "c": 3, "d": 4}
        """,
        'assert shortest_distances({"x": []}, "x") == {"x": 0}',
        'assert shortest_distances({"a": [("b", 2)], "c": [("a", 1)]}, "a") == {"a": 0, "b": 2}',
        """
        g = {i: [(i + 1, 1), (i + 2, 3)] for i in range(1000)}
        assert shortest_distances(g, 0)[1000] == 1000
        """,
    ],
)

problem(
    "eval_rpn",
    "eval_rpn",
    """
    Write `eval_rpn(tokens)` evaluating a list of tokens in Reverse Polish notation
    with integers and the operators + - * /; division truncates toward zero.
    """,
    """
    def eval_rpn(tokens):
        stack = []
        for t in tokens:
            if t in {"+", "-", "*", "/"}:
                b, a = stack.pop(), stack.pop()
                if t == "+":
                    stack.append(a + b)
                elif t == "-":
                    stack.append(a - b)
                elif t == "*":
                    stack.append(a * b)
                else:
                    stack.append(int(a / b))
            else:
                stack.append(int(t))
        return stack[0]
    """,
    [
        'assert eval_rpn(["2", "1", "+", "3", "*"]) == 9',
        'assert eval_rpn(["4", "13", "5", "/", "+"]) == 6',
        'assert eval_rpn(["10", "6", "9", "3", "+", "-11", "*", "/", "*", "17", "+", "5", "+"]) == 22',
        'assert eval_rpn(["7", "-2", "/"]) == -3',
    ],
)

problem(
    "calculator",
    "calculate",
    """
    Write `calculate(expr)` evaluating an arithmetic expression string with integers,
    + - * /, parentheses, unary minus and spaces. `/` is true division; return a
    number. Do not use `eval`.
    """,
    """
    import re

    def calculate(expr):
        tokens = re.findall(r"\\d+\\.?\\d*|[-+*/()]", expr)
        pos = 0

        def peek():
            return tokens[pos] if pos < len(tokens) else None

        def take():
            nonlocal pos
            pos += 1
            return tokens[pos - 1]

        def expression():
            value = term()
            while peek() in ("+", "-"):
                value = value + term() if take() == "+" else value - term()
            return value

        def term():
            value = factor()
            while peek() in ("*", "/"):
                value = value * factor() if take() == "*" else value / factor()
            return value

        def factor():
            t = take()
            if t == "-":
                return -factor()
            if t == "(":
                value = expression()
                take()
                return value
            return float(t) if "." in t else int(t)

        return expression()
    """,
    [
        'assert calculate("1 + 2 * 3") == 7',
        'assert calculate("(1 + 2) * 3") == 9',
        'assert abs(calculate("7 / 2") - 3.5) < 1e-9',
        'assert calculate("-(4 - 6) * -3") == -6',
        'assert calculate("2 * (3 + (4 - 1)) - 10") == 2',
        'assert calculate("  42 ") == 42',
    ],
)

problem(
    "lru_cache",
    "LRUCache",
    """
    Write a class `LRUCache(capacity)` with `get(key)` (the value, or -1 when absent)
    and `put(key, value)`. When full, `put` of a new key evicts the least recently used
    key; both `get` and `put` count as a use.
    """,
    """
    from collections import OrderedDict

    class LRUCache:
        def __init__(self, capacity):
            self.capacity = capacity
            self.data = OrderedDict()

        def get(self, key):
            if key not in self.data:
                return -1
            self.data.move_to_end(key)
            return self.data[key]

        def put(self, key, value):
            self.data[key] = value
            self.data.move_to_end(key)
            if len(self.data) > self.capacity:
                self.data.popitem(last=False)
    """,
    [
        """
        c = LRUCache(2)
        c.put(1, 1); c.put(2, 2)
        assert c.get(1) == 1
        c.put(3, 3)
        assert c.get(2) == -1
        c.put(4, 4)
        assert c.get(1) == -1 and c.get(3) == 3 and c.get(4) == 4
        """,
        "c = LRUCache(1)\nc.put(1, 'a')\nc.put(1, 'b')\nassert c.get(1) == 'b'",
        "c = LRUCache(2)\nassert c.get(5) == -1",
        """
        c = LRUCache(2)
        c.put(1, 1); c.put(2, 2); c.put(1, 10); c.put(3, 3)
        assert c.get(1) == 10 and c.get(2) == -1
        """,
    ],
)

problem(
    "min_stack",
    "MinStack",
    """
    Write a class `MinStack` with `push(x)`, `pop()` (removes and returns the top),
    `top()` and `get_min()`, each in O(1) time.
    """,
    """
    class MinStack:
        def __init__(self):
            self.items = []

        def push(self, x):
            low = min(x, self.items[-1][1]) if self.items else x
            self.items.append((x, low))

        def pop(self):
            return self.items.pop()[0]

        def top(self):
            return self.items[-1][0]

        def get_min(self):
            return self.items[-1][1]
    """,
    [
        """
        s = MinStack()
        s.push(-2); s.push(0); s.push(-3)
        assert s.get_min() == -3
        assert s.pop() == -3
        assert s.top() == 0 and s.get_min() == -2
        """,
        "s = MinStack()\ns.push(5)\nassert s.top() == 5 and s.get_min() == 5",
        """
        s = MinStack()
        for x in [3, 1, 2, 1]:
            s.push(x)
        s.pop()
        assert s.get_min() == 1
        s.pop(); s.pop()
        assert s.get_min() == 3
        """,
    ],
)

problem(
    "matrix_multiply",
    "matmul",
    """
    Write `matmul(a, b)` multiplying two matrices given as lists of lists; raise
    `ValueError` when the shapes do not fit.
    """,
    """
    def matmul(a, b):
        if not a or not b or len(a[0]) != len(b):
            raise ValueError("shapes do not fit")
        cols = list(zip(*b))
        return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]
    """,
    [
        "assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]",
        "assert matmul([[1, 2, 3]], [[1], [2], [3]]) == [[14]]",
        """
        try:
            matmul([[1, 2]], [[1, 2]])
        except ValueError:
            pass
        else:
            raise AssertionError("expected ValueError")
        """,
        "assert matmul([[2]], [[3]]) == [[6]]",
    ],
)

problem(
    "spiral_order",
    "spiral_order",
    """
    Write `spiral_order(matrix)` returning the elements of an m x n matrix in clockwise
    spiral order, starting at the top-left.
    """,
    """
    def spiral_order(matrix):
        out = []
        m = [list(r) for r in matrix]
        while m:
            out += m.pop(0)
            m = [list(r) for r in zip(*m)][::-1]
        return out
    """,
    [
        "assert spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]",
        "assert spiral_order([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]) == "
        "[1, 2, 3, 4, 8, 12, 11, 10, 9, 5, 6, 7]",
        "assert spiral_order([]) == []",
        "assert spiral_order([[1], [2], [3]]) == [1, 2, 3]",
    ],
)

problem(
    "caesar_cipher",
    "caesar",
    """
    Write `caesar(text, shift)` shifting each ASCII letter by `shift` places in the
    alphabet (wrapping around, keeping case; `shift` may be negative or large); other
    characters are unchanged.
    """,
    """
    def caesar(text, shift):
        out = []
        for c in text:
            if "a" <= c <= "z":
                out.append(chr((ord(c) - 97 + shift) % 26 + 97))
            elif "A" <= c <= "Z":
                out.append(chr((ord(c) - 65 + shift) % 26 + 65))
            else:
                out.append(c)
        return "".join(out)
    """,
    [
        'assert caesar("abc", 1) == "bcd"',
        'assert caesar("Hello, World!", 3) == "Khoor, Zruog!"',
        'assert caesar("xyz", 3) == "abc"',
        'assert caesar("abc", -1) == "zab"',
        'assert caesar("Zebra", 52) == "Zebra"',
    ],
)

problem(
    "snake_case",
    "to_snake_case",
    """
    Write `to_snake_case(name)` converting camelCase or PascalCase identifiers to
    snake_case. A run of capitals is one word: "parseHTTPResponse" ->
    "parse_http_response".
    """,
    """
    import re

    def to_snake_case(name):
        s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\\1_\\2", name)
        s = re.sub(r"([a-z0-9])([A-Z])", r"\\1_\\2", s)
        return s.lower()
    """,
    [
        'assert to_snake_case("camelCase") == "camel_case"',
        'assert to_snake_case("PascalCaseName") == "pascal_case_name"',
        'assert to_snake_case("parseHTTPResponse") == "parse_http_response"',
        'assert to_snake_case("already_snake") == "already_snake"',
        'assert to_snake_case("version2Update") == "version2_update"',
    ],
)

problem(
    "parse_csv_line",
    "parse_csv_line",
    """
    Write `parse_csv_line(line)` splitting one CSV line into fields. Fields may be
    quoted with double quotes; inside quotes commas are literal and `""` is one quote.
    Do not use the `csv` module.
    """,
    """
    def parse_csv_line(line):
        fields, cur, quoted, i = [], [], False, 0
        while i < len(line):
            c = line[i]
            if quoted:
                if c == '"' and i + 1 < len(line) and line[i + 1] == '"':
                    cur.append('"')
                    i += 1
                elif c == '"':
                    quoted = False
                else:
                    cur.append(c)
            elif c == '"':
                quoted = True
            elif c == ",":
                fields.append("".join(cur))
                cur = []
            else:
                cur.append(c)
            i += 1
        fields.append("".join(cur))
        return fields
    """,
    [
        'assert parse_csv_line("a,b,c") == ["a", "b", "c"]',
        'assert parse_csv_line(\'"a,b",c\') == ["a,b", "c"]',
        'assert parse_csv_line(\'"say ""hi""",x\') == [\'say "hi"\', "x"]',
        'assert parse_csv_line("") == [""]',
        'assert parse_csv_line("a,,b,") == ["a", "", "b", ""]',
    ],
)

problem(
    "running_median",
    "running_median",
    """
    Write `running_median(stream)` returning, for each prefix of the list `stream`,
    the median so far (the mean of the two middle values for even lengths), as floats.
    It must handle 100 000 numbers quickly.
    """,
    """
    import heapq

    def running_median(stream):
        low, high, out = [], [], []
        for x in stream:
            heapq.heappush(low, -x)
            heapq.heappush(high, -heapq.heappop(low))
            if len(high) > len(low):
                heapq.heappush(low, -heapq.heappop(high))
            out.append(float(-low[0]) if len(low) > len(high) else (-low[0] + high[0]) / 2)
        return out
    """,
    [
        "assert running_median([2, 1, 5, 7, 2, 0, 5]) == [2.0, 1.5, 2.0, 3.5, 2.0, 2.0, 2.0]",
        "assert running_median([]) == []",
        "assert running_median([4]) == [4.0]",
        # Its reply fits under the grader's 1 MiB frame limit.
        "r = running_median(list(range(20000)))\nassert r[-1] == 9999.5 and r[2] == 1.0",
    ],
)

problem(
    "unique_permutations",
    "permutations",
    """
    Write `permutations(s)` returning the sorted list of distinct permutations of the
    string `s`.
    """,
    """
    from itertools import permutations as _perms

    def permutations(s):
        return sorted({"".join(p) for p in _perms(s)})
    """,
    [
        'assert permutations("abc") == ["abc", "acb", "bac", "bca", "cab", "cba"]',
        'assert permutations("aab") == ["aab", "aba", "baa"]',
        'assert permutations("") == [""]',
        'assert len(permutations("aabbcc")) == 90',
    ],
)

problem(
    "n_queens",
    "n_queens",
    """
    Write `n_queens(n)` returning the number of ways to place n queens on an n x n
    board so that no two attack each other.
    """,
    """
    def n_queens(n):
        def place(row, cols, d1, d2):
            if row == n:
                return 1
            total = 0
            for c in range(n):
                if c not in cols and row - c not in d1 and row + c not in d2:
                    total += place(row + 1, cols | {c}, d1 | {row - c}, d2 | {row + c})
            return total
        return place(0, frozenset(), frozenset(), frozenset())
    """,
    [
        "assert n_queens(1) == 1",
        "assert n_queens(4) == 2",
        "assert n_queens(6) == 4",
        "assert n_queens(8) == 92",
        "assert n_queens(3) == 0",
    ],
)

problem(
    "valid_sudoku",
    "is_valid_sudoku",
    """
    Write `is_valid_sudoku(board)`: `board` is 9 strings of 9 characters, digits 1-9 or
    "." for empty. Return True when no row, column or 3x3 box repeats a digit (the
    board need not be solvable).
    """,
    """
    def is_valid_sudoku(board):
        seen = set()
        for r in range(9):
            for c in range(9):
                d = board[r][c]
                if d == ".":
                    continue
                keys = [("r", r, d), ("c", c, d), ("b", r // 3, c // 3, d)]
                if any(k in seen for k in keys):
                    return False
                seen.update(keys)
        return True
    """,
    [
        """
        board = ["53..7....", "6..195...", ".98....6.", "8...6...3", "4..8.3..1",
                 "7...2...6", ".6....28.", "...419..5", "....8..79"]
        assert is_valid_sudoku(board) is True
        """,
        """
        board = ["83..7....", "6..195...", ".98....6.", "8...6...3", "4..8.3..1",
                 "7...2...6", ".6....28.", "...419..5", "....8..79"]
        assert is_valid_sudoku(board) is False
        """,
        'assert is_valid_sudoku(["." * 9] * 9) is True',
        """
        board = ["1........", ".1.......", *(["." * 9] * 7)]
        assert is_valid_sudoku(board) is False
        """,
    ],
)

problem(
    "longest_unique_substring",
    "longest_unique_substring",
    """
    Write `longest_unique_substring(s)` returning the length of the longest substring
    of `s` without repeating characters.
    """,
    """
    def longest_unique_substring(s):
        last, start, best = {}, 0, 0
        for i, c in enumerate(s):
            if last.get(c, -1) >= start:
                start = last[c] + 1
            last[c] = i
            best = max(best, i - start + 1)
        return best
    """,
    [
        'assert longest_unique_substring("abcabcbb") == 3',
        'assert longest_unique_substring("bbbbb") == 1',
        'assert longest_unique_substring("pwwkew") == 3',
        'assert longest_unique_substring("") == 0',
        'assert longest_unique_substring("abba") == 2',
    ],
)

problem(
    "decode_ways",
    "num_decodings",
    """
    Letters map to numbers: A=1, ..., Z=26. Write `num_decodings(s)` returning how many
    ways the digit string `s` can be decoded into letters.
    """,
    """
    def num_decodings(s):
        if not s:
            return 0
        prev, cur = 1, 0 if s[0] == "0" else 1
        for i in range(1, len(s)):
            nxt = 0
            if s[i] != "0":
                nxt += cur
            if 10 <= int(s[i - 1 : i + 1]) <= 26:
                nxt += prev
            prev, cur = cur, nxt
        return cur
    """,
    [
        'assert num_decodings("12") == 2',
        'assert num_decodings("226") == 3',
        'assert num_decodings("06") == 0',
        'assert num_decodings("11106") == 2',
        'assert num_decodings("1" * 40) == 165580141',
    ],
)

problem(
    "to_base",
    "to_base",
    """
    Write `to_base(n, base)` writing the integer `n` in a base from 2 to 36 with digits
    0-9 then lowercase a-z; negative numbers get a leading "-".
    """,
    """
    def to_base(n, base):
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"
        if n == 0:
            return "0"
        sign, n = ("-", -n) if n < 0 else ("", n)
        out = []
        while n:
            n, r = divmod(n, base)
            out.append(digits[r])
        return sign + "".join(reversed(out))
    """,
    [
        'assert to_base(255, 16) == "ff"',
        'assert to_base(5, 2) == "101"',
        'assert to_base(0, 7) == "0"',
        'assert to_base(-35, 36) == "-z"',
        "assert int(to_base(123456789, 36), 36) == 123456789",
    ],
)

problem(
    "is_anagram",
    "is_anagram",
    """
    Write `is_anagram(a, b)`: True when `b` is a rearrangement of the letters of `a`,
    ignoring case and spaces.
    """,
    """
    from collections import Counter

    def is_anagram(a, b):
        norm = lambda s: Counter(s.replace(" ", "").lower())
        return norm(a) == norm(b)
    """,
    [
        'assert is_anagram("listen", "silent") is True',
        'assert is_anagram("Dormitory", "dirty room") is True',
        'assert is_anagram("rat", "car") is False',
        'assert is_anagram("aab", "abb") is False',
    ],
)

problem(
    "balanced_split",
    "can_partition",
    """
    Write `can_partition(nums)`: True when the list of positive integers can be split
    into two groups with equal sums.
    """,
    """
    def can_partition(nums):
        total = sum(nums)
        if total % 2:
            return False
        reachable = 1
        for x in nums:
            reachable |= reachable << x
        return bool(reachable >> (total // 2) & 1)
    """,
    [
        "assert can_partition([1, 5, 11, 5]) is True",
        "assert can_partition([1, 2, 3, 5]) is False",
        "assert can_partition([2, 2]) is True",
        "assert can_partition([100] * 199 + [50]) is False",
        "assert can_partition(list(range(1, 201))) is True",
    ],
)

problem(
    "word_break",
    "word_break",
    """
    Write `word_break(s, words)`: True when the string `s` can be split into a sequence
    of one or more words from the list `words` (words may be reused).
    """,
    """
    def word_break(s, words):
        vocab = set(words)
        ok = [True] + [False] * len(s)
        for i in range(1, len(s) + 1):
            ok[i] = any(ok[j] and s[j:i] in vocab for j in range(i))
        return ok[-1]
    """,
    [
        'assert word_break("leetcode", ["leet", "code"]) is True',
        'assert word_break("applepenapple", ["apple", "pen"]) is True',
        'assert word_break("catsandog", ["cats", "dog", "sand", "and", "cat"]) is False',
        'assert word_break("a" * 200 + "b", ["a", "aa", "aaa"]) is False',
    ],
)

problem(
    "matrix_paths",
    "unique_paths",
    """
    Write `unique_paths(grid)`: `grid` is a list of lists of 0 (free) and 1 (blocked).
    Return the number of paths from the top-left to the bottom-right moving only
    right or down.
    """,
    """
    def unique_paths(grid):
        cols = len(grid[0])
        ways = [0] * cols
        ways[0] = 1 if grid[0][0] == 0 else 0
        for row in grid:
            for c in range(cols):
                if row[c] == 1:
                    ways[c] = 0
                elif c:
                    ways[c] += ways[c - 1]
        return ways[-1]
    """,
    [
        "assert unique_paths([[0, 0, 0], [0, 1, 0], [0, 0, 0]]) == 2",
        "assert unique_paths([[0, 1], [0, 0]]) == 1",
        "assert unique_paths([[1]]) == 0",
        "assert unique_paths([[0] * 10 for _ in range(10)]) == 48620",
    ],
)

problem(
    "interval_scheduling",
    "max_meetings",
    """
    Write `max_meetings(meetings)`: `meetings` is a list of `(start, end)` pairs; return
    the largest number of meetings one person can attend (a meeting may start exactly
    when the previous one ends).
    """,
    """
    def max_meetings(meetings):
        count, free_at = 0, float("-inf")
        for start, end in sorted(meetings, key=lambda m: m[1]):
            if start >= free_at:
                count += 1
                free_at = end
        return count
    """,
    [
        "assert max_meetings([(1, 2), (3, 4), (0, 6), (5, 7), (8, 9), (5, 9)]) == 4",
        "assert max_meetings([]) == 0",
        "assert max_meetings([(1, 3), (3, 5)]) == 2",
        "assert max_meetings([(1, 10), (2, 3), (4, 5)]) == 2",
    ],
)

problem(
    "bank_account",
    "Account",
    """
    Write a class `Account(owner, balance=0)` with `deposit(amount)` and
    `withdraw(amount)`; both raise `ValueError` for non-positive amounts, and `withdraw`
    raises `ValueError` when the balance would go negative. Keep `balance` as an
    attribute and a `history` list of `("deposit" | "withdraw", amount)` tuples.
    """,
    """
    class Account:
        def __init__(self, owner, balance=0):
            self.owner = owner
            self.balance = balance
            self.history = []

        def deposit(self, amount):
            if amount <= 0:
                raise ValueError("amount must be positive")
            self.balance += amount
            self.history.append(("deposit", amount))

        def withdraw(self, amount):
            if amount <= 0:
                raise ValueError("amount must be positive")
            if amount > self.balance:
                raise ValueError("insufficient funds")
            self.balance -= amount
            self.history.append(("withdraw", amount))
    """,
    [
        "a = Account('ann', 10)\na.deposit(5)\na.withdraw(3)\nassert a.balance == 12",
        "a = Account('bob')\na.deposit(7)\nassert a.history == [('deposit', 7)]",
        """
        a = Account('cy', 5)
        try:
            a.withdraw(6)
        except ValueError:
            assert a.balance == 5 and a.history == []
        else:
            raise AssertionError("expected ValueError")
        """,
        """
        a = Account('di')
        for bad in (0, -1):
            try:
                a.deposit(bad)
            except ValueError:
                continue
            raise AssertionError("expected ValueError")
        """,
    ],
)

problem(
    "json_flatten",
    "flatten_dict",
    """
    Write `flatten_dict(d)` flattening nested dicts into one dict whose keys are the
    paths joined with ".", e.g. {"a": {"b": 1}} -> {"a.b": 1}. Non-dict values
    (lists included) are leaves; an empty nested dict disappears.
    """,
    """
    def flatten_dict(d, prefix=""):
        out = {}
        for k, v in d.items():
            key = f"{prefix}{k}"
            if isinstance(v, dict):
                out.update(flatten_dict(v, key + "."))
            else:
                out[key] = v
        return out
    """,
    [
        'assert flatten_dict({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a.b": 1, "a.c.d": 2, "e": 3}',
        "assert flatten_dict({}) == {}",
        'assert flatten_dict({"x": [1, {"y": 2}]}) == {"x": [1, {"y": 2}]}',
        'assert flatten_dict({"a": {}, "b": 0}) == {"b": 0}',
    ],
)

problem(
    "trapping_rain_water",
    "trap",
    """
    Write `trap(heights)`: given bar heights of width 1, return how much rain water
    is trapped between the bars.
    """,
    """
    def trap(heights):
        left, right = 0, len(heights) - 1
        left_max = right_max = water = 0
        while left < right:
            if heights[left] < heights[right]:
                left_max = max(left_max, heights[left])
                water += left_max - heights[left]
                left += 1
            else:
                right_max = max(right_max, heights[right])
                water += right_max - heights[right]
                right -= 1
        return water
    """,
    [
        "assert trap([0, 1, 0, 2, 1, 0, 1, 3, 2, 1, 2, 1]) == 6",
        "assert trap([4, 2, 0, 3, 2, 5]) == 9",
        "assert trap([]) == 0",
        "assert trap([1, 2, 3]) == 0",
    ],
)

problem(
    "kth_largest",
    "kth_largest",
    """
    Write `kth_largest(nums, k)` returning the k-th largest element of `nums`
    (k = 1 is the maximum; duplicates count separately).
    """,
    """
    import heapq

    def kth_largest(nums, k):
        return heapq.nlargest(k, nums)[-1]
    """,
    [
        "assert kth_largest([3, 2, 1, 5, 6, 4], 2) == 5",
        "assert kth_largest([3, 2, 3, 1, 2, 4, 5, 5, 6], 4) == 4",
        "assert kth_largest([1], 1) == 1",
        "assert kth_largest([7, 7, 7], 3) == 7",
    ],
)


def write(path: Path = OUT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for p in PROBLEMS:
            f.write(json.dumps(p, sort_keys=True) + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    print(f"{len(PROBLEMS)} problems -> {OUT}")
