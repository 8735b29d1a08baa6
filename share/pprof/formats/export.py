"""stub"""


def folded_lines(stacks, weights):
    return []
