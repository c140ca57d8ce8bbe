"""What every layer may know of a dataset being loaded: the LOADING error reply, and the two kinds of
load recorded in the persistence stats' "loading" entry (persistence/loading.py runs the loads).

Rule: constants only; imports nothing.
"""

LOADING_ERR = b"LOADING Redis is loading the dataset in memory"
SYNC, ASYNC = 1, 2  # stats["loading"]: a plain load, or a replica's swapdb load beside the served data
