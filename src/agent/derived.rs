//! Agents made from another: the same tools, hooks and settings with another model or generator,
//! or fewer tools.

use std::sync::Arc;

use super::AgentInner;
use crate::generator::{Generator, Model};
use crate::Agent;

impl Agent {
    /// The same agent asking another model: tools, hooks, budget and settings are shared,
    /// runs already started keep their model. The context window becomes the new model's,
    /// when golato knows it. An interactive front end switches models this way mid-session;
    /// the transcript goes on as it is (a model of another provider needs a generator of its
    /// own, so build another agent for it).
    ///
    /// ```
    /// use golato::agent::{self, Agent};
    /// use golato::generator::{Model, Scripted};
    /// use golato::message::AssistantMessage;
    ///
    /// let agent = Agent::new(agent::Config {
    ///     generator: Some(std::sync::Arc::new(Scripted::new(Vec::<AssistantMessage>::new()))),
    ///     model: Model::new("small"),
    ///     ..Default::default()
    /// })?;
    /// let larger = agent.with_model(Model::new("large"));
    /// assert_eq!(larger.model().id, "large");
    /// assert_eq!(agent.model().id, "small");
    /// # Ok::<(), agent::Error>(())
    /// ```
    #[must_use]
    pub fn with_model(&self, model: Model) -> Agent {
        let mut inner = AgentInner::clone(&self.inner);
        inner.context_window =
            crate::generator::context_window(&model.id).or(self.inner.context_window);
        let output_schema = inner.model.output_schema.take();
        inner.model = Model {
            output_schema: model.output_schema.or(output_schema),
            ..model
        };
        Agent {
            inner: Arc::new(inner),
        }
    }

    /// The same agent asking another generator: tools, hooks, budget and settings are shared.
    /// A front end runs calls it makes itself through the agent's hooks and tools this way
    /// (a generator that answers with those calls), so rules, sandbox and approvals judge
    /// them as they judge the model's.
    ///
    /// ```
    /// use golato::agent::{self, Agent};
    /// use golato::generator::{Model, Scripted};
    /// use golato::message::AssistantMessage;
    ///
    /// let agent = Agent::new(agent::Config {
    ///     generator: Some(std::sync::Arc::new(Scripted::new(vec![AssistantMessage::with_text("one")]))),
    ///     model: Model::new("small"),
    ///     ..Default::default()
    /// })?;
    /// let other = agent.with_generator(std::sync::Arc::new(Scripted::new(vec![
    ///     AssistantMessage::with_text("two"),
    /// ])));
    /// let prompt = golato::message::UserMessage::new("hi");
    /// let result = futures::executor::block_on(other.run(prompt))?;
    /// assert_eq!(result.final_message.text(), "two");
    /// # Ok::<(), agent::Error>(())
    /// ```
    #[must_use]
    pub fn with_generator(&self, generator: Arc<dyn Generator>) -> Agent {
        let mut inner = AgentInner::clone(&self.inner);
        inner.generator = generator;
        Agent {
            inner: Arc::new(inner),
        }
    }

    /// The same agent offering only the tools named in `names` (in its own order): a prompt
    /// that should only look, or a command file's tool list. Names it does not have are
    /// returned apart, so the caller can say so; it never gains a tool.
    ///
    /// ```
    /// use golato::agent::{self, Agent};
    /// use golato::generator::{Model, Scripted};
    /// use golato::message::AssistantMessage;
    /// use golato::tool::{Tool, ToolResult};
    ///
    /// let tool = |name: &str| {
    ///     Tool::new(name, "a tool", serde_json::json!({"type": "object"}), |_, _| async {
    ///         Ok(ToolResult::text("ok"))
    ///     })
    /// };
    /// let agent = Agent::new(agent::Config {
    ///     generator: Some(std::sync::Arc::new(Scripted::new(Vec::<AssistantMessage>::new()))),
    ///     model: Model::new("small"),
    ///     tools: vec![tool("read"), tool("bash"), tool("edit")],
    ///     ..Default::default()
    /// })?;
    /// let (looking, unknown) = agent.with_tools_only(&["read", "grep"]);
    /// let names: Vec<&str> = looking.tool_definitions().iter().map(|d| d.name.as_str()).collect();
    /// assert_eq!(names, ["read"]);
    /// assert_eq!(unknown, ["grep"]);
    /// # Ok::<(), agent::Error>(())
    /// ```
    #[must_use]
    pub fn with_tools_only(&self, names: &[&str]) -> (Agent, Vec<String>) {
        let unknown = names
            .iter()
            .filter(|name| self.inner.registry.get(name).is_none())
            .map(|name| (*name).to_owned())
            .collect();
        let mut inner = AgentInner::clone(&self.inner);
        inner.registry = self.inner.registry.only(names);
        inner.definitions = self
            .inner
            .definitions
            .iter()
            .filter(|definition| names.contains(&definition.name.as_str()))
            .cloned()
            .collect();
        inner.prelude_tokens = inner
            .compaction
            .counter
            .count_prelude(inner.system_prompt.as_deref(), &inner.definitions);
        (
            Agent {
                inner: Arc::new(inner),
            },
            unknown,
        )
    }
}
