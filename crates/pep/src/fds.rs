//! File descriptors for `--max-conns`: each relayed connection holds two sockets (client and
//! upstream leg), and the process needs a few more of its own (listener, stats listener,
//! the runtime's epoll and wake-up descriptors, stdio, the `--report` spool file, probes).
//! At the common soft `RLIMIT_NOFILE` of 1,024, a proxy allowing 1,024 connections runs out
//! of descriptors near 500 of them: `accept` or the upstream `socket` then fails and the
//! connection is reset. So at startup the soft limit is raised to what `--max-conns` needs
//! (up to the hard limit), and a hard limit too low for it is refused in one line.

/// Descriptors the process uses besides its connections (generous: a handful in practice).
pub const RESERVED_FDS: u64 = 64;

/// Descriptors `max_conns` connections need.
pub fn needed(max_conns: usize) -> u64 {
    2 * max_conns as u64 + RESERVED_FDS
}

/// The soft and hard `RLIMIT_NOFILE` (`RLIM_INFINITY` is `u64::MAX`; `rlim_t` is `u64` on
/// Linux).
pub fn nofile_limits() -> Result<(u64, u64), String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(format!(
            "getrlimit(RLIMIT_NOFILE): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Raises the soft `RLIMIT_NOFILE` to what `--max-conns` needs; returns the soft limit now
/// in force. Refuses (one line) when the hard limit is below the need.
pub fn ensure_for(max_conns: usize) -> Result<u64, String> {
    let need = needed(max_conns);
    let (soft, hard) = nofile_limits()?;
    if soft >= need {
        return Ok(soft);
    }
    if hard < need {
        let most = hard.saturating_sub(RESERVED_FDS) / 2;
        return Err(format!(
            "--max-conns = {max_conns}: needs {need} file descriptors (2 per connection + \
             {RESERVED_FDS}), but the hard limit RLIMIT_NOFILE is {hard}; allowed: \
             --max-conns at most {most}, or a higher hard limit (ulimit -Hn, LimitNOFILE=)"
        ));
    }
    let lim = libc::rlimit {
        rlim_cur: need,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid pointer to an initialized rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(format!(
            "--max-conns = {max_conns}: cannot raise the soft RLIMIT_NOFILE from {soft} to \
             {need}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(need)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_max_conns_needs_more_than_the_common_soft_limit() {
        // 1,024 connections x 2 sockets + 64 of the process's own
        assert_eq!(needed(1024), 2112);
        assert!(needed(1024) > 1024);
    }
}
