"""The conformance suite's resource, prompt and completion fixtures.

Resources: ``test://static-text``, ``test://static-binary``, the template
``test://template/{id}/data`` and ``test://watched-resource`` (resources group,
``caching`` reads the first listed resource). Prompts: ``test_simple_prompt``,
``test_prompt_with_arguments`` (with a completer for ``arg1``, used by
``completion-complete``), ``test_prompt_with_embedded_resource`` and
``test_prompt_with_image``. See the conformance notes
(``shared/conformance/README.md`` §2.1, §2.5, §2.6).

The MRTR prompt ``test_input_required_result_prompt`` lives in ``mrtr.py``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from django_mcp import McpRequest, PromptArgument, prompt, resource

from .fixtures import image_block, tiny_png

STATIC_TEXT = "This is the content of the static text resource."


# -- resources -------------------------------------------------------------------


@resource(
    "test://static-text",
    name="static-text",
    title="Static text resource",
    description="A static text resource for testing.",
    mime_type="text/plain",
)
def static_text(request: McpRequest) -> str:
    return STATIC_TEXT


@resource(
    "test://static-binary",
    name="static-binary",
    title="Static binary resource",
    description="A static binary resource (a 1x1 PNG) for testing.",
    mime_type="image/png",
)
def static_binary(request: McpRequest) -> bytes:
    return base64.b64decode(tiny_png())


@resource(
    "test://watched-resource",
    name="watched-resource",
    title="Watched resource",
    description="A resource clients may subscribe to for updates.",
    mime_type="text/plain",
)
def watched_resource(request: McpRequest) -> str:
    return "This is a watched resource."


def complete_template_id(request: McpRequest, value: str, arguments: dict[str, Any]) -> list[str]:
    return [v for v in ("1", "42", "123") if v.startswith(value)]


@resource(
    "test://template/{id}/data",
    name="template-data",
    title="Template data",
    description="Data for an id: reading test://template/123/data returns JSON naming 123.",
    mime_type="application/json",
    complete={"id": complete_template_id},
)
def template_data(request: McpRequest, id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# -- prompts ---------------------------------------------------------------------


@prompt(name="test_simple_prompt", title="Simple prompt", description="A simple prompt without arguments.")
def test_simple_prompt(request: McpRequest) -> str:
    return "This is a simple prompt for testing."


ARG1_SUGGESTIONS = ("paris", "park", "party", "test", "testValue1")


def complete_arg1(request: McpRequest, value: str, arguments: dict[str, Any]) -> list[str]:
    """Suggestions for ``arg1`` that start with what was typed so far."""
    return [v for v in ARG1_SUGGESTIONS if v.startswith(value)]


@prompt(
    name="test_prompt_with_arguments",
    title="Prompt with arguments",
    description="A prompt with two required arguments, substituted into its text.",
    arguments=[
        PromptArgument("arg1", description="First test argument", required=True),
        PromptArgument("arg2", description="Second test argument", required=True),
    ],
    complete={"arg1": complete_arg1},
)
def test_prompt_with_arguments(request: McpRequest, arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt(
    name="test_prompt_with_embedded_resource",
    title="Prompt with embedded resource",
    description="A prompt whose first message embeds the resource named by resourceUri.",
    arguments=[PromptArgument("resourceUri", description="URI of the resource to embed", required=True)],
)
def test_prompt_with_embedded_resource(request: McpRequest, resourceUri: str) -> list[dict[str, Any]]:  # noqa: N803 - the wire name
    return [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {
                    "uri": resourceUri,
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                },
            },
        },
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


@prompt(name="test_prompt_with_image", title="Prompt with image", description="A prompt with an image message.")
def test_prompt_with_image(request: McpRequest) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": image_block()},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]
