"""The dumbbell of benchmarks/peers/run.py in ns-3 (its PyPI wheel, run in the virtualenv
run.py makes for it): FLOWS bulk TCP flows (ns-3's default TCP) from one node to another over
one point-to-point link of RATE_MBPS and DELAY_MS one way, a DropTail device queue of
QUEUE_PKTS packets (no other queueing discipline), segments of MSS bytes, for DURATION_S.

    python ns3_dumbbell.py FLOWS RATE_MBPS DELAY_MS QUEUE_PKTS DURATION_S MSS

Prints one JSON line: the payload bytes the sink received and the CPU seconds of the
simulation alone (after the bindings loaded).
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    flows, rate, delay, queue, duration, mss = sys.argv[1:7]
    from ns import ns  # the bindings load for seconds: not part of the simulation's time

    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(int(mss)))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 24))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 24))
    nodes = ns.NodeContainer()
    nodes.Create(2)
    link = ns.PointToPointHelper()
    link.SetDeviceAttribute("DataRate", ns.StringValue(f"{float(rate)}Mbps"))
    link.SetChannelAttribute("Delay", ns.StringValue(f"{float(delay)}ms"))
    link.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue(f"{int(queue)}p"))
    devices = link.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = addresses.Assign(devices)
    # assigning addresses installs a queueing discipline on each device: removed, so the
    # device's DropTail queue is the only one, as in the other simulators
    ns.TrafficControlHelper().Uninstall(devices)
    port = 9
    sink = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    )
    sinks = sink.Install(nodes.Get(1))
    sinks.Start(ns.Seconds(0.0))
    target = ns.InetSocketAddress(interfaces.GetAddress(1), port).ConvertTo()
    for i in range(int(flows)):
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", target)
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(int(mss)))
        apps = bulk.Install(nodes.Get(0))
        apps.Start(ns.MicroSeconds(i))
    ns.Simulator.Stop(ns.Seconds(float(duration)))
    started = time.process_time()
    ns.Simulator.Run()
    cpu_s = time.process_time() - started
    received = ns.DynamicCast[ns.PacketSink](sinks.Get(0)).GetTotalRx()
    ns.Simulator.Destroy()
    print(json.dumps({"delivered_bytes": int(received), "run_cpu_s": cpu_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
