/* The grammar a request's answer must follow (grammar-constrained sampling,
 * gmask.h), from its response_format and tool_choice:
 *
 *   response_format json_object          any JSON object
 *   response_format json_schema          JSON valid under the schema (jschema.h)
 *   tool_choice "required"               one or more tool calls (parallel_tool_calls: up to
 *                                        ZN_SRV_MAX_TOOL_CALLS), each naming one of the tools with
 *                                        arguments valid under its parameters schema
 *   tool_choice {"function": {"name"}}   one call of that function
 *   response_format + tool_choice auto   the answer, or calls with any JSON object as arguments
 *
 * Calls are written the way the tool-call parser (toolcall.h) reads them in
 * the template's format: <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>
 * for Hermes and the XML family (the parser takes the JSON form in both),
 * {"name": ..., "parameters": ...} separated by ';' for Llama 3. After a
 * prompt that opened a <think> block the reasoning is free up to </think>. */
#ifndef ZINC_CONSTRAIN_H
#define ZINC_CONSTRAIN_H

#include <stdbool.h>

#include "oai.h"
#include "toolcall.h"

/* *gbnf: the grammar (malloc'd GBNF, root rule "root"), or NULL when the
 * request leaves the answer free. false with e set (400 naming the schema
 * feature that is not supported, 500 out of memory). */
bool constrain_gbnf(const zn_oai_req *r, const zn_toolset *ts, int tool_fmt, bool think_open, char **gbnf,
                    zn_oai_error *e);

#endif
