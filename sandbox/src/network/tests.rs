#![allow(clippy::unwrap_used)]

use super::*;

fn address(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn patterns_match_hosts_ports_and_subdomains_and_deny_wins() {
    let policy = NetworkPolicy::new(
        &["example.com", "*.example.org", "api.test:8443", "@npm"],
        &["evil.example.org"],
        Methods::All,
    )
    .unwrap();
    assert!(policy.judge_host("example.com", 443).is_ok());
    assert!(
        policy.judge_host("EXAMPLE.com.", 80).is_ok(),
        "case and trailing dot"
    );
    assert!(
        policy.judge_host("sub.example.com", 443).is_err(),
        "exact only"
    );
    assert!(policy.judge_host("a.b.example.org", 443).is_ok());
    assert!(
        policy.judge_host("example.org", 443).is_err(),
        "*. is under, not itself"
    );
    assert!(policy.judge_host("notexample.org", 443).is_err());
    assert_eq!(
        policy.judge_host("evil.example.org", 443).unwrap_err().why,
        Why::Denied
    );
    assert!(policy.judge_host("api.test", 8443).is_ok());
    assert!(policy.judge_host("api.test", 443).is_err(), "another port");
    assert!(policy.judge_host("registry.npmjs.org", 443).is_ok());
    assert_eq!(
        policy
            .judge_host("example.net", 443)
            .unwrap_err()
            .to_string(),
        "golato: example.net is not allowed; --allow-domain example.net"
    );
    assert!(policy.judge_host("", 443).is_err());
    assert!(policy.judge_host("ex ample.com", 443).is_err());
}

#[test]
fn bad_patterns_and_unknown_presets_are_named() {
    for bad in [
        "",
        "exa mple.com",
        "a.*.com",
        "host:99999",
        "@nope",
        "[::1",
        "ü.com",
    ] {
        let error = NetworkPolicy::new(&[bad], &[], Methods::All).unwrap_err();
        assert_eq!(error.pattern, bad, "{error}");
    }
    assert!(NetworkPolicy::new(
        &["[::1]:8080", "10.0.0.5", "xn--bcher-kva.example"],
        &[],
        Methods::All
    )
    .is_ok());
}

#[test]
fn a_name_resolving_to_a_local_address_needs_a_pattern_naming_it_exactly() {
    let policy = NetworkPolicy::new(
        &["*.example.com", "intranet.test", "10.1.2.3"],
        &[],
        Methods::All,
    )
    .unwrap();
    for local in [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fd00::1",
        "::",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
    ] {
        let refused = policy
            .judge_address("api.example.com", address(local), 443)
            .unwrap_err();
        assert_eq!(refused.why, Why::LocalAddress(address(local)), "{local}");
    }
    for public in [
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
        "1.1.1.1",
    ] {
        assert!(
            policy
                .judge_address("api.example.com", address(public), 443)
                .is_ok(),
            "{public}"
        );
    }
    // Named exactly: a host, or the address itself.
    assert!(policy
        .judge_address("intranet.test", address("10.9.9.9"), 443)
        .is_ok());
    assert!(policy
        .judge_address("anything.example.com", address("10.1.2.3"), 443)
        .is_ok());
    assert!(policy
        .judge_address("x", address("::ffff:10.1.2.3"), 443)
        .is_ok());
    assert!(policy
        .judge_address("api.example.com", address("169.254.169.254"), 443)
        .unwrap_err()
        .to_string()
        .contains("a local address"));
}

#[test]
fn a_port_named_binds_its_pattern_for_local_addresses_too_and_a_denied_address_denies_its_names() {
    let policy = NetworkPolicy::new(
        &[
            "127.0.0.2:8000",
            "*.allowed.test",
            "api.allowed.test:8000",
            "@npm",
        ],
        &["127.0.0.3"],
        Methods::All,
    )
    .unwrap();
    let local = address("127.0.0.2");
    assert!(policy.judge_address("127.0.0.2", local, 8000).is_ok());
    assert!(policy
        .judge_address("sub.allowed.test", local, 8000)
        .is_ok());
    for (host, port) in [
        ("sub.allowed.test", 9000),
        ("api.allowed.test", 9000),
        ("127.0.0.2", 9000),
        ("registry.npmjs.org", 9000),
    ] {
        assert_eq!(
            policy.judge_address(host, local, port).unwrap_err().why,
            Why::LocalAddress(local),
            "{host}:{port}"
        );
    }
    assert!(policy
        .judge_address("registry.npmjs.org", local, 443)
        .is_ok());
    let denied = address("127.0.0.3");
    let refused = policy
        .judge_address("api.allowed.test", denied, 8000)
        .unwrap_err();
    assert_eq!(refused.why, Why::DeniedAddress(denied));
    assert!(
        refused.to_string().contains("--deny-domain 127.0.0.3"),
        "{refused}"
    );
    // A preset's hosts: https and http only.
    assert!(policy.judge_host("registry.npmjs.org", 443).is_ok());
    assert!(policy.judge_host("registry.npmjs.org", 80).is_ok());
    assert!(policy.judge_host("registry.npmjs.org", 22).is_err());
}

#[test]
fn read_mode_refuses_methods_that_send() {
    let policy = NetworkPolicy::new(&["example.com"], &[], Methods::Read).unwrap();
    for method in ["GET", "HEAD", "OPTIONS"] {
        assert!(policy.judge_method("example.com", method).is_ok());
    }
    for method in ["POST", "PUT", "DELETE", "PATCH", "CONNECT"] {
        assert!(
            policy.judge_method("example.com", method).is_err(),
            "{method}"
        );
    }
    assert!(policy.read_only());
    let said = policy
        .judge_method("example.com", "CONNECT")
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("(--network-methods read)") && !said.contains("methods ="),
        "{said}"
    );
    let all = NetworkPolicy::new(&["example.com"], &[], Methods::All).unwrap();
    assert!(!all.read_only());
    assert!(all.judge_method("example.com", "POST").is_ok());
}
