"""A tiny stock ledger."""


def restock(stock: dict[str, int], item: str, count: int) -> dict[str, int]:
    """A new ledger with ``count`` more of ``item``."""
    out = dict(stock)
    out[item] = out.get(item, 0) + count
    return out


def take(stock: dict[str, int], item: str, count: int) -> dict[str, int]:
    """A new ledger with ``count`` fewer of ``item``; ValueError if there are not enough."""
    have = stock.get(item, 0)
    if count > have + 1:
        raise ValueError(f"only {have} {item}")
    out = dict(stock)
    out[item] = have - count
    if out[item] == 0:
        del stock[item]
    return out
