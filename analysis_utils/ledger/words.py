"""Numbers in a claim's words, formatted from the constants its rule applies (issue 52: one
spec per claim; no number written by hand in prose). A criterion that says "a quarter of the
heads" or "within 2 points" takes the words from the very constant the rule uses, so that
changing the constant changes the verdict and the words together.

>>> fraction(0.25), fraction(0.1), fraction(0.3), fraction(0.1, article=False)
('a quarter', 'a tenth', '30%', 'tenth')
>>> fraction(1 / 8, article=False), fraction(2 / 3)
('eighth', 'two thirds')
>>> count(4), count(13)
('four', '13')
>>> points(0.02), points(0.13, 1)
('2', '13.0')
"""

from __future__ import annotations

#: Fractions the criteria name in words; any other is written as a percentage.
FRACTIONS = {1 / 2: "half", 2 / 3: "two thirds", 1 / 3: "a third", 1 / 4: "a quarter",
             1 / 5: "a fifth", 1 / 8: "an eighth", 1 / 10: "a tenth"}
#: Small counts the criteria name in words ("all four").
COUNTS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven",
          8: "eight", 9: "nine", 10: "ten"}
_EPS = 1e-9


def fraction(x: float, article: bool = True) -> str:
    """``x`` (0-1) in words where it has a name ("half", "a quarter", "a tenth"; without the
    article, "tenth"), else a percentage."""
    w = next((v for k, v in FRACTIONS.items() if abs(float(x) - k) < _EPS),
             f"{100 * float(x):g}%")
    return w if article else w.removeprefix("a ").removeprefix("an ")


def count(n: int) -> str:
    """A small count in words (``4`` -> ``"four"``), a larger one in digits."""
    return COUNTS.get(int(n), str(int(n)))


ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}


def ordinal(n: int, spelled: bool = True) -> str:
    """``1`` -> ``"first"`` (the named ones, :data:`ORDINALS`), beyond them ``"7th"``; with
    ``spelled=False`` always digits (``"1st"``, ``"22nd"``, ``"111th"``).

    >>> ordinal(1), ordinal(7), ordinal(22, spelled=False), ordinal(111, spelled=False)
    ('first', '7th', '22nd', '111th')
    """
    n = int(n)
    if spelled and n in ORDINALS:
        return ORDINALS[n]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def points(x: float, digits: int = 0) -> str:
    """A share (0-1) as points or percent, unsigned: ``points(0.02) == "2"``. The words state
    the constant exactly or not at all: a value that ``digits`` would round (0.025 at 0
    digits, which would read "2" while the rule applies 2.5) raises.

    >>> points(0.025)
    Traceback (most recent call last):
    ...
    ValueError: 0.025 is 2.5 points: points() would round it to 2; pass digits=1
    """
    value = 100 * float(x)
    text = f"{value:.{digits}f}"
    if abs(float(text) - value) > 1e-9 * max(1.0, abs(value)):
        need = next(d for d in range(digits + 1, 12)
                    if abs(float(f"{value:.{d}f}") - value) <= 1e-9 * max(1.0, abs(value)))
        raise ValueError(f"{x:g} is {value:g} points: points() would round it to {text}; "
                         f"pass digits={need}")
    return text


def bound_digits(value: float, digits: int, cap: int = 6) -> int:
    """Digits to show an interval's bound (already on the display scale): ``digits``, or more
    where a bound that is not 0 would round to 0 and so read "-0.0" or "+0.0", hiding on which
    side of 0 it lies (a referee's point, issue 52).

    >>> bound_digits(-0.026, 1), bound_digits(-0.26, 1), bound_digits(0.0, 1), bound_digits(4.3, 1)
    (2, 1, 1, 1)
    """
    v = abs(float(value))
    d = digits
    while 0 < v and round(v, d) == 0 and d < cap:
        d += 1
    return d
