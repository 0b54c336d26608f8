"""Observing one run packet by packet: pcapng captures, the senders' event log, and what
is read back from them (time-sequence data for Stevens plots).

- `request`: `Trace`, what to record (directory, event-log file, filters), checked before a
  run and turned into the core's trace specification;
- `events`: the core's raw event records to Parquet, in bounded chunks, and back;
- `pcapng`: a reader of pcapng (and classic pcap) files;
- `packets`: TCP segments of a capture, per connection;
- `tseq`: the time-sequence view of one connection (data, ACKs, SACK blocks,
  retransmissions, drops between two capture points).
"""
