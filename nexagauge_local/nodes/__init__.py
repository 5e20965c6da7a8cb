"""Pipeline nodes: each module or package here that exports a SPEC is one node.

graph.py discovers them; nothing here lists them, so adding a node is adding its module.
"""
