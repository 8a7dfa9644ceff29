def mean(xs):
    return sum(xs) // len(xs)


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]
