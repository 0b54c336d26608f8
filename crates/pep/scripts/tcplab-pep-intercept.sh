#!/bin/sh
# tcplab-pep-intercept.sh — divert TCP connections crossing a Linux gateway into tcplab-pep.
#
#   tcplab-pep-intercept.sh up   --in IFACE --ports 80,443,5201 [options]
#   tcplab-pep-intercept.sh down [same options]
#
# Methods (--method):
#   nft       (default) nftables TPROXY: new connections arriving on --in to --ports are
#             delivered to the proxy's listener on --proxy-port; packets of sockets the proxy
#             owns (incl. replies to its upstream sockets bound to the client's address) are
#             marked by the `socket transparent` match and routed locally. Other traffic is
#             forwarded untouched.
#   iptables  the same with iptables (mangle/PREROUTING: -m socket --transparent, -j TPROXY).
#   anyip     no netfilter: every packet arriving on --in or --out is delivered locally (policy
#             routing only); the proxy listens on the service port itself (--proxy-port is then
#             unused: run `tcplab-pep --listen 0.0.0.0:SERVICE_PORT --transparent`). Meant for
#             emulation namespaces where the gateway carries nothing but proxied TCP.
#
# Options:
#   --in IFACE         interface the clients' connections arrive on (required)
#   --out IFACE        server-side interface (anyip only, required there)
#   --ports LIST       destination ports to intercept, comma-separated (nft/iptables; required)
#   --proxy-port N     the proxy's --listen port (default 15201)
#   --fwmark N         mark that selects the local-delivery routing table (default 1)
#   --table N          routing table number for local delivery (default 100)
#   --skip-mark N      never intercept packets carrying this mark (e.g. the proxy's --mark)
#   --ipv6             also set up IPv6
#
# Then run e.g.: tcplab-pep --listen 0.0.0.0:15201 --transparent --cca-upstream bbr
# `down` removes exactly what `up` added (and tolerates parts already gone).
set -eu

usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "error: $*" >&2; exit 2; }

ACTION=${1:-}
[ -n "$ACTION" ] || usage
shift
METHOD=nft IN="" OUT="" PORTS="" PROXY_PORT=15201 FWMARK=1 TABLE=100 SKIP_MARK="" IPV6=0
while [ $# -gt 0 ]; do
    case "$1" in
        --method) METHOD=$2; shift 2 ;;
        --in) IN=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --ports) PORTS=$2; shift 2 ;;
        --proxy-port) PROXY_PORT=$2; shift 2 ;;
        --fwmark) FWMARK=$2; shift 2 ;;
        --table) TABLE=$2; shift 2 ;;
        --skip-mark) SKIP_MARK=$2; shift 2 ;;
        --ipv6) IPV6=1; shift ;;
        -h|--help) usage ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
case "$ACTION" in up|down) ;; *) die "action must be up or down" ;; esac
[ -n "$IN" ] || die "--in IFACE is required"
case "$METHOD" in
    nft|iptables) [ -n "$PORTS" ] || die "--ports LIST is required for --method $METHOD" ;;
    anyip) [ -n "$OUT" ] || die "--out IFACE is required for --method anyip" ;;
    *) die "--method must be nft, iptables or anyip" ;;
esac
[ "$(id -u)" = 0 ] || die "needs root (CAP_NET_ADMIN)"

FAMILIES="-4"
[ "$IPV6" = 1 ] && FAMILIES="-4 -6"

# Tolerant runner for `down`: a rule that is already gone is not an error.
quiet() { "$@" 2>/dev/null || true; }

routing_up() {
    for f in $FAMILIES; do
        if [ "$f" = -4 ]; then any=0.0.0.0/0; else any=::/0; fi
        ip "$f" route replace local "$any" dev lo table "$TABLE"
        if [ "$METHOD" = anyip ]; then
            ip "$f" rule add iif "$IN" lookup "$TABLE"
            ip "$f" rule add iif "$OUT" lookup "$TABLE"
        else
            ip "$f" rule add fwmark "$FWMARK" lookup "$TABLE"
        fi
    done
}

routing_down() {
    for f in $FAMILIES; do
        if [ "$f" = -4 ]; then any=0.0.0.0/0; else any=::/0; fi
        if [ "$METHOD" = anyip ]; then
            quiet ip "$f" rule del iif "$IN" lookup "$TABLE"
            quiet ip "$f" rule del iif "$OUT" lookup "$TABLE"
        else
            quiet ip "$f" rule del fwmark "$FWMARK" lookup "$TABLE"
        fi
        quiet ip "$f" route del local "$any" dev lo table "$TABLE"
    done
}

nft_up() {
    command -v nft >/dev/null || die "nft not found (Debian package nftables)"
    ports=$(echo "$PORTS" | sed 's/,/, /g')
    skip=""
    [ -n "$SKIP_MARK" ] && skip="meta mark $SKIP_MARK accept"
    v6=""
    if [ "$IPV6" = 1 ]; then
        v6="iifname \"$IN\" meta nfproto ipv6 tcp dport { $ports } tproxy ip6 to :$PROXY_PORT meta mark set $FWMARK accept"
    fi
    nft -f - <<EOF
table inet tcplab_pep {
    chain prerouting {
        type filter hook prerouting priority mangle; policy accept;
        $skip
        meta l4proto tcp socket transparent 1 meta mark set $FWMARK accept
        iifname "$IN" meta nfproto ipv4 tcp dport { $ports } tproxy ip to :$PROXY_PORT meta mark set $FWMARK accept
        $v6
    }
}
EOF
}

nft_down() { quiet nft delete table inet tcplab_pep; }

ipt_rules() {
    # $1: -A (add) or -D (delete); $2: iptables or ip6tables
    op=$1 ipt=$2
    if [ -n "$SKIP_MARK" ]; then
        $ipt -t mangle "$op" PREROUTING -m mark --mark "$SKIP_MARK" -j RETURN
    fi
    $ipt -t mangle "$op" PREROUTING -p tcp -m socket --transparent -j TCPLAB_PEP_DIVERT
    $ipt -t mangle "$op" PREROUTING -i "$IN" -p tcp -m multiport --dports "$PORTS" \
        -j TPROXY --on-port "$PROXY_PORT" --tproxy-mark "$FWMARK/$FWMARK"
}

ipt_up() {
    for f in $FAMILIES; do
        if [ "$f" = -4 ]; then ipt=iptables; else ipt=ip6tables; fi
        command -v "$ipt" >/dev/null || die "$ipt not found (Debian package iptables)"
        $ipt -t mangle -N TCPLAB_PEP_DIVERT
        $ipt -t mangle -A TCPLAB_PEP_DIVERT -j MARK --set-mark "$FWMARK"
        $ipt -t mangle -A TCPLAB_PEP_DIVERT -j ACCEPT
        ipt_rules -A "$ipt"
    done
}

ipt_down() {
    for f in $FAMILIES; do
        if [ "$f" = -4 ]; then ipt=iptables; else ipt=ip6tables; fi
        command -v "$ipt" >/dev/null || continue
        quiet ipt_rules -D "$ipt"
        quiet "$ipt" -t mangle -F TCPLAB_PEP_DIVERT
        quiet "$ipt" -t mangle -X TCPLAB_PEP_DIVERT
    done
}

case "$ACTION:$METHOD" in
    up:nft) nft_up; routing_up ;;
    up:iptables) ipt_up; routing_up ;;
    up:anyip) routing_up ;;
    down:nft) nft_down; routing_down ;;
    down:iptables) ipt_down; routing_down ;;
    down:anyip) routing_down ;;
esac
if [ "$ACTION" = up ]; then
    echo "interception up ($METHOD); forwarding: $(cat /proc/sys/net/ipv4/ip_forward)" \
         "(set net.ipv4.ip_forward=1 for the traffic that is not intercepted)"
fi
