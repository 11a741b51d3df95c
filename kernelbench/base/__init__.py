"""What every stage may import: the shared run models (`models`) and the exploit catalogue (`catalogue`).

Nothing here imports another part of the package, so no stage depends on a later one through it.
"""
