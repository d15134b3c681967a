//! What the runtime says of itself through the C ABI, from Rust: its ops (names, aliases,
//! roles, arguments), its levers by name with provenance, set by name at open, and explain's
//! answer for both seed ops against the guards' documented floors computed here.
use metrale_rust_engine::{ffi, ArgKind, Runtime};

#[test]
fn ops_are_listed_with_their_roles_and_arguments() {
    let rt = Runtime::open_host("hopper").unwrap();
    let ops = rt.ops().unwrap();
    let names: Vec<&str> = ops.iter().map(|op| op.name.as_str()).collect();
    assert!(names.contains(&"ssm_ba_gates") && names.contains(&"fp8_act_quant"), "{names:?}");

    let ba = rt.op("ba-gates").unwrap();
    assert_eq!((ba.name.as_str(), ba.aliases.clone()), ("ssm_ba_gates", vec!["ba-gates".to_string()]));
    let roles: Vec<(&str, &str)> = ba.roles.iter().map(|r| (r.role.as_str(), r.kernel.as_str())).collect();
    assert_eq!(
        roles,
        [
            ("parent", "ssm_ba_gates"),
            ("twin", "ssm_ba_gates_hopper"),
            ("tensor_core", "ssm_ba_gates_mma"),
            ("decode", "ssm_ba_gates_splitk")
        ]
    );
    assert_eq!(ba.roles[3].aliases, ["splitk"]);
    assert_eq!(ba.roles[3].lever.as_deref(), Some("ssm_ba_gates_decode"));
    assert_eq!(ba.roles[2].aliases, ["mma"]);
    assert_eq!(ba.roles[2].lever.as_deref(), Some("ssm_ba_gates_tensor_core"));
    assert!(ba.roles[0].lever.is_none() && ba.roles.iter().all(|r| r.shipped && r.present), "{:?}", ba.roles);
    let x = &ba.args[0];
    assert_eq!((x.name.as_str(), x.kind, x.dtype.as_str(), x.alignment), ("x", ArgKind::Input, "bf16", 16));
    assert_eq!((x.dims.clone(), x.fallback), (vec!["m".to_string(), "k_stride".to_string()], None));
    let k_stride = ba.args.iter().find(|a| a.name == "k_stride").unwrap();
    assert_eq!((k_stride.kind, k_stride.fallback), (ArgKind::Scalar, Some(0)));

    let fp8 = rt.op("fp8_act_quant").unwrap();
    assert_eq!(fp8.roles[0].aliases, ["shared"]);
    let layout = fp8.args.iter().find(|a| a.name == "scale_layout").unwrap();
    assert_eq!((layout.min, layout.max), (0, 1));
    let err = rt.op("silu").unwrap_err();
    assert!(err.status == ffi::METRALE_ERROR_ARGUMENT && err.message.contains("fp8_act_quant"), "{err}");
}

#[test]
fn levers_are_listed_and_set_by_name() {
    let rt = Runtime::open_host_with("hopper", &[("fp8_act_quant_hopper", false)]).unwrap();
    let levers = rt.levers().unwrap();
    let fp8 = levers.iter().find(|l| l.name == "fp8_act_quant_hopper").expect("fp8's lever listed");
    assert_eq!(
        (fp8.value, fp8.provenance.as_str(), fp8.env_var.as_str()),
        (false, "options", "METRALE_FP8_ACT_QUANT_HOPPER")
    );
    let twin = rt.lever("ssm_ba_gates_hopper").unwrap();
    assert_eq!((twin.value, twin.provenance.as_str()), (true, "file"), "{twin:?}");
    assert!(levers.iter().any(|l| l.name == "ssm_ba_gates_tensor_core"));
    let err = rt.lever("no_such_lever").unwrap_err();
    assert!(err.message.contains("ssm_ba_gates_hopper"), "the known levers are not listed: {err}");
    let Err(err) = Runtime::open_host_with("hopper", &[("no_such_lever", true)]) else {
        panic!("an unknown lever opened")
    };
    assert!(err.status == ffi::METRALE_ERROR_CONFIG && err.message.contains("no_such_lever"), "{err}");
}

#[test]
fn explain_answers_both_ops() {
    let rt = Runtime::open_host("hopper").unwrap();
    let why = rt.explain("ssm_ba_gates", &[("m", 5), ("n", 8), ("k", 256)], true).unwrap();
    assert_eq!((why.kernel.as_deref(), why.role.as_deref(), why.sm_count), (Some("ssm_ba_gates"), Some("parent"), 132));
    let roles: Vec<&str> = why.roles.iter().map(|r| r.role.as_str()).collect();
    assert_eq!(roles, ["tensor_core", "decode", "twin"]);
    let (tc, decode, twin) = (&why.roles[0], &why.roles[1], &why.roles[2]);
    // K = 256 is 32 vectors of 8: too short to split over a cluster.
    assert!(!decode.runs && decode.min_m.is_none(), "{decode:?}");
    // The twin takes two tokens (CTAs) per SM; the tensor-core kernel a twelfth of the SMs in
    // blocks of 128-token tiles split over K's 4 chunks of 64.
    assert_eq!(twin.min_m, Some(2 * why.sm_count), "{twin:?}");
    assert_eq!(tc.min_m, Some(128 * (why.sm_count.div_ceil(12)).div_ceil(4)), "{tc:?}");
    assert!(!twin.runs && twin.reject.as_deref().unwrap().contains("too few tokens"), "{twin:?}");
    assert!(twin.lever_origin.starts_with("file"), "{twin:?}");
    assert!(tc.details.contains(&("tokens_per_tile".to_string(), 128)), "{:?}", tc.details);

    let floors = rt.explain("ssm_ba_gates", &[("n", 8), ("k", 256)], false).unwrap();
    assert_eq!((floors.kernel, floors.roles[2].min_m), (None, Some(2 * why.sm_count)));

    // FP8: 8 groups of 128 per CTA and 2 CTAs per SM: at K = 5120 (5 CTAs a row) ceil(2 SMs / 5).
    let min_m = (2 * why.sm_count).div_ceil(5);
    let fp8 = rt.explain("fp8-quant", &[("m", u64::from(min_m)), ("k", 5120)], true).unwrap();
    assert_eq!(
        (fp8.op.as_str(), fp8.kernel.as_deref(), fp8.roles[0].min_m),
        ("fp8_act_quant", Some("fp8_act_quant_hopper"), Some(53))
    );
    let below = rt.explain("fp8_act_quant", &[("m", u64::from(min_m - 1)), ("k", 5120)], true).unwrap();
    assert!(below.roles[0].reject.as_deref().unwrap().contains("too few CTAs"), "{below:?}");
    let off = Runtime::open_host_with("hopper", &[("fp8_act_quant_hopper", false)]).unwrap();
    let never = off.explain("fp8_act_quant", &[("m", 4096), ("k", 5120)], true).unwrap();
    assert_eq!((never.roles[0].min_m, never.roles[0].min_reason.as_deref()), (None, Some("not requested")));
    assert!(never.roles[0].lever_origin.starts_with("options"), "{never:?}");
    let err = rt.explain("fp8_act_quant", &[("tokens", 1)], true).unwrap_err();
    assert!(err.message.contains("'tokens'"), "{err}");
}

#[test]
fn prepare_makes_an_op_ready_for_a_graph_capture() {
    let mut rt = Runtime::open_host("hopper").unwrap();
    // The guards' pick and every role built: the parent and the twin of the FP8 op.
    let prepared = rt.prepare("fp8_act_quant", "", &[("m", 1), ("k", 256)]).unwrap();
    assert!(prepared >= 2, "{prepared}");
    assert_eq!(rt.prepare("fp8_act_quant", "parent", &[("m", 1), ("k", 256)]).unwrap(), 1);
    let err = rt.prepare("fp8_act_quant", "", &[("m", 1), ("k", 100)]).unwrap_err();
    assert_eq!(err.status, ffi::METRALE_ERROR_ARGUMENT, "{err:?}");
    assert!(err.message.contains("K=100") && err.message.contains("metrale_op_prepare"), "{err:?}");
}
