//! What a runtime says of itself through the C ABI, copied into owned values: its levers (by
//! index and [defaults] key, with provenance), its ops (name, aliases, roles, arguments and
//! their rules) and explain's answer for a shape. Nothing here runs a kernel.
use crate::{c_args, c_string, check, ffi, init, text, Result, Runtime};

/// One lever: its [defaults] key, its value and where that came from ("built-in", "file",
/// "environment", "options").
#[derive(Debug, Clone, PartialEq)]
pub struct Lever {
    pub name: String,
    pub value: bool,
    pub provenance: String,
    pub origin: String,
    pub env_var: String,
}

/// One kernel of an op, by role; `aliases` are other spellings `run_role` takes.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleInfo {
    pub role: String,
    pub kernel: String,
    pub aliases: Vec<String>,
    pub lever: Option<String>,
    pub shipped: bool,
    pub present: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Input,
    Output,
    Scalar,
}

/// One argument an op takes by name: a tensor (dtype, alignment, extents by the scalars they
/// are) or a scalar (its closed range; `fallback` when it may be left out).
#[derive(Debug, Clone, PartialEq)]
pub struct ArgInfo {
    pub name: String,
    pub kind: ArgKind,
    pub dtype: String,
    pub alignment: u32,
    pub dims: Vec<String>,
    pub min: u64,
    pub max: u64,
    pub fallback: Option<u64>,
    pub doc: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpInfo {
    pub name: String,
    pub aliases: Vec<String>,
    pub summary: String,
    pub roles: Vec<RoleInfo>,
    pub args: Vec<ArgInfo>,
}

/// One guarded role at a shape: whether it runs and why not, its lever, and the smallest M it
/// takes at the shape's other sizes (`min_m` None with `min_reason` when never).
#[derive(Debug, Clone, PartialEq)]
pub struct RoleExplanation {
    pub role: String,
    pub kernel: String,
    pub present: bool,
    pub runs: bool,
    pub reject: Option<String>,
    pub lever: Option<String>,
    pub requested: bool,
    pub lever_origin: String,
    pub min_m: Option<u32>,
    pub min_reason: Option<String>,
    pub details: Vec<(String, i64)>,
}

/// The pick for a shape: what a call runs now (None when M was not given) and each guarded
/// role, the first guard first.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    pub op: String,
    pub kernel: Option<String>,
    pub role: Option<String>,
    pub sm_count: u32,
    pub roles: Vec<RoleExplanation>,
}

fn list(p: *const std::os::raw::c_char) -> Vec<String> {
    text(p).unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn non_empty(p: *const std::os::raw::c_char) -> Option<String> {
    text(p).filter(|s| !s.is_empty())
}

fn lever(l: &ffi::metrale_lever_info) -> Lever {
    Lever {
        name: text(l.name).unwrap_or_default(),
        value: l.value != 0,
        provenance: text(l.provenance).unwrap_or_default(),
        origin: text(l.origin).unwrap_or_default(),
        env_var: text(l.env_var).unwrap_or_default(),
    }
}

fn role_explanation(r: &ffi::metrale_role_explanation) -> RoleExplanation {
    let details = (r.detail_count as usize).min(ffi::METRALE_MAX_EXPLAIN_DETAILS);
    RoleExplanation {
        role: text(r.role).unwrap_or_default(),
        kernel: text(r.kernel).unwrap_or_default(),
        present: r.present != 0,
        runs: r.runs != 0,
        reject: text(r.reject),
        lever: non_empty(r.lever),
        requested: r.requested != 0,
        lever_origin: text(r.lever_origin).unwrap_or_default(),
        min_m: (r.has_min_m != 0).then_some(r.min_m),
        min_reason: text(r.min_reason),
        details: r.details[..details].iter().map(|d| (text(d.name).unwrap_or_default(), d.value)).collect(),
    }
}

impl Runtime {
    fn describe(&self) -> Result<ffi::metrale_runtime_info> {
        let mut info = init(ffi::metrale_runtime_info_init);
        check(unsafe { ffi::metrale_runtime_describe(self.raw, &mut info) })?;
        Ok(info)
    }

    /// The runtime's target ("hopper").
    pub fn target(&self) -> Result<String> {
        Ok(text(self.describe()?.target).unwrap_or_default())
    }

    /// Every lever, in the order the ops declare them.
    pub fn levers(&self) -> Result<Vec<Lever>> {
        (0..self.describe()?.lever_count)
            .map(|i| {
                let mut info = init(ffi::metrale_lever_info_init);
                check(unsafe { ffi::metrale_lever_get(self.raw, i, &mut info) })?;
                Ok(lever(&info))
            })
            .collect()
    }

    /// The lever of that [defaults] key; the library's error names the known keys for another.
    pub fn lever(&self, name: &str) -> Result<Lever> {
        let name = c_string(name, "lever")?;
        let mut info = init(ffi::metrale_lever_info_init);
        check(unsafe { ffi::metrale_lever_find(self.raw, name.as_ptr(), &mut info) })?;
        Ok(lever(&info))
    }

    /// Every op the runtime serves, in its order.
    pub fn ops(&self) -> Result<Vec<OpInfo>> {
        (0..self.describe()?.op_count)
            .map(|i| {
                let mut info = init(ffi::metrale_op_info_init);
                check(unsafe { ffi::metrale_op_get(self.raw, i, &mut info) })?;
                self.op(&text(info.name).unwrap_or_default())
            })
            .collect()
    }

    /// The op of that name or alias, with its roles and arguments.
    pub fn op(&self, name: &str) -> Result<OpInfo> {
        let name = c_string(name, "op")?;
        let mut info = init(ffi::metrale_op_info_init);
        check(unsafe { ffi::metrale_op_find(self.raw, name.as_ptr(), &mut info) })?;
        let roles = (0..info.role_count)
            .map(|i| {
                let mut r = init(ffi::metrale_role_info_init);
                check(unsafe { ffi::metrale_op_role(self.raw, name.as_ptr(), i, &mut r) })?;
                Ok(RoleInfo {
                    role: text(r.role).unwrap_or_default(),
                    kernel: text(r.kernel).unwrap_or_default(),
                    aliases: list(r.aliases),
                    lever: non_empty(r.lever),
                    shipped: r.shipped != 0,
                    present: r.present != 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let args = (0..info.arg_count)
            .map(|i| {
                let mut a = init(ffi::metrale_arg_info_init);
                check(unsafe { ffi::metrale_op_arg_get(self.raw, name.as_ptr(), i, &mut a) })?;
                let kind = match a.kind {
                    ffi::METRALE_ARG_INPUT => ArgKind::Input,
                    ffi::METRALE_ARG_OUTPUT => ArgKind::Output,
                    _ => ArgKind::Scalar,
                };
                Ok(ArgInfo {
                    name: text(a.name).unwrap_or_default(),
                    kind,
                    dtype: text(a.dtype).unwrap_or_default(),
                    alignment: a.alignment,
                    dims: list(a.dims),
                    min: a.min,
                    max: a.max,
                    fallback: (a.required == 0).then_some(a.fallback),
                    doc: text(a.doc).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(OpInfo {
            name: text(info.name).unwrap_or_default(),
            aliases: list(info.aliases),
            summary: text(info.summary).unwrap_or_default(),
            roles,
            args,
        })
    }

    /// The pick for a shape without launching: `shape` names the op's scalars; `m_given` false
    /// asks for each guarded role's smallest M instead.
    pub fn explain(&self, op: &str, shape: &[(&str, u64)], m_given: bool) -> Result<Explanation> {
        let op = c_string(op, "op")?;
        let named = c_args(shape)?;
        let mut why = init(ffi::metrale_op_explanation_init);
        check(unsafe {
            ffi::metrale_op_explain(
                self.raw,
                op.as_ptr(),
                named.args.as_ptr(),
                named.args.len(),
                i32::from(m_given),
                &mut why,
            )
        })?;
        let roles = (why.role_count as usize).min(ffi::METRALE_MAX_EXPLAIN_ROLES);
        Ok(Explanation {
            op: text(why.op).unwrap_or_default(),
            kernel: non_empty(why.kernel),
            role: non_empty(why.role),
            sm_count: why.sm_count,
            roles: why.roles[..roles].iter().map(role_explanation).collect(),
        })
    }
}
