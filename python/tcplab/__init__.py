"""tcplab: TCP congestion-control lab."""
