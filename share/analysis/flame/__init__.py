"""share.analysis.flame: the flame graph of one sample type, as the page draws it.

tree merges stacks into a call tree within the node budget and node fraction (ties to the
shallower node), trie builds that tree once per Stacks and weighs it per sample type, flame
lays it out as the flame graph JSON (README's format), zoom gives the tree under one frame path
with a budget of its own, treeorder the orders they need. Imports measure and model only.
"""
